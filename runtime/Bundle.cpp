//===- Bundle.cpp - loading and validating a compiled bundle --------------===//

#include "runtime/Bundle.h"

#include "runtime/Error.h"
#include "runtime/FileIO.h"

#include <cstring>

namespace fbt {

namespace {
constexpr char kMagic[8] = {'F', 'B', 'T', 'B', 'N', 'D', 'L', '1'};
constexpr size_t kHeader = 24;

uint64_t readU64(const std::string &s, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | (unsigned char)s[at + i];
  return v;
}

uint64_t alignTo64(uint64_t v) { return (v + 63) & ~uint64_t(63); }

std::vector<int64_t> shapeOf(const Json &j) {
  std::vector<int64_t> s;
  for (const Json &d : j.asArray())
    s.push_back(d.asInt());
  return s;
}

TensorSpec tensorOf(const Json &j) {
  TensorSpec t;
  t.name = j.at("name").asString();
  t.dtype = j.at("dtype").asString();
  t.shape = shapeOf(j.at("shape"));
  t.bytes = j.at("bytes").asInt();
  if (const Json *p = j.find("param"))
    t.param = p->asBool();
  if (const Json *u = j.find("updates"))
    t.updates = u->asInt();
  return t;
}

BufferRef refOf(const Json &j) {
  const Json::Array &a = j.asArray();
  if (a.size() != 4)
    throw RuntimeError("a buffer reference must have 4 fields");
  BufferRef r;
  const std::string &kind = a[0].asString();
  if (kind == "input")
    r.kind = BufferRef::Kind::Input;
  else if (kind == "output")
    r.kind = BufferRef::Kind::Output;
  else if (kind == "const")
    r.kind = BufferRef::Kind::Const;
  else if (kind == "arena")
    r.kind = BufferRef::Kind::Arena;
  else
    throw RuntimeError("unknown buffer kind '" + kind + "'");
  r.index = a[1].asInt();
  r.offset = a[2].asInt();
  r.bytes = a[3].asInt();
  return r;
}

StepPlan planOf(const std::string &name, const Json &j) {
  StepPlan p;
  p.name = name;
  p.kind = j.at("kind").asString();
  p.passes = j.at("passes").asInt();
  p.arenaBytes = j.at("arena_bytes").asInt();
  for (const Json &t : j.at("inputs").asArray())
    p.inputs.push_back(tensorOf(t));
  for (const Json &t : j.at("outputs").asArray())
    p.outputs.push_back(tensorOf(t));
  for (const Json &c : j.at("constants").asArray())
    p.constants.push_back({c.at("dtype").asString(), c.at("count").asInt(),
                           c.at("value").asDouble()});
  for (const Json &o : j.at("ops").asArray()) {
    PlanOp op;
    if (const Json *k = o.find("kernel")) {
      op.kernel = k->asString();
    } else {
      const Json::Array &g = o.at("gemm").asArray();
      const Json::Array &t = o.at("transpose").asArray();
      if (g.size() != 3 || t.size() != 2)
        throw RuntimeError("a GEMM needs [m, n, k] and two transposes");
      op.m = g[0].asInt();
      op.n = g[1].asInt();
      op.k = g[2].asInt();
      op.transposeLhs = t[0].asBool();
      op.transposeRhs = t[1].asBool();
      if (const Json *types = o.find("types")) {
        const Json::Array &ty = types->asArray();
        if (ty.size() != 3)
          throw RuntimeError("a GEMM's types are [lhs, rhs, result]");
        op.lhsType = ty[0].asString();
        op.rhsType = ty[1].asString();
        op.resultType = ty[2].asString();
        for (const std::string *s : {&op.lhsType, &op.rhsType, &op.resultType})
          if (*s != "f32" && *s != "bf16")
            throw RuntimeError("a GEMM of element type '" + *s +
                               "' (expected f32 or bf16)");
        if (op.lhsType != op.rhsType)
          throw RuntimeError("a GEMM's operands must share a type, got " +
                             op.lhsType + " and " + op.rhsType);
      }
    }
    for (const Json &a : o.at("args").asArray())
      op.args.push_back(refOf(a));
    p.ops.push_back(std::move(op));
  }
  for (const Json &c : j.at("copies").asArray())
    p.copies.push_back({c.at("output").asInt(), refOf(c.at("from"))});
  return p;
}

/// Every reference lies inside the buffer it names.
void checkRef(const StepPlan &p, const BufferRef &r) {
  auto inside = [&](int64_t size) {
    return r.offset >= 0 && r.bytes >= 0 && r.offset + r.bytes <= size;
  };
  bool ok = false;
  switch (r.kind) {
  case BufferRef::Kind::Input:
    ok = r.index >= 0 && r.index < (int64_t)p.inputs.size() &&
         inside(p.inputs[r.index].bytes);
    break;
  case BufferRef::Kind::Output:
    ok = r.index >= 0 && r.index < (int64_t)p.outputs.size() &&
         inside(p.outputs[r.index].bytes);
    break;
  case BufferRef::Kind::Const:
    ok = r.index >= 0 && r.index < (int64_t)p.constants.size() &&
         inside(p.constants[r.index].bytes());
    break;
  case BufferRef::Kind::Arena:
    ok = inside(p.arenaBytes);
    break;
  }
  if (!ok)
    throw RuntimeError("step '" + p.name +
                       "' references a buffer outside its bounds");
}

void checkPlan(const StepPlan &p, const std::vector<std::string> &kernels) {
  for (const PlanOp &op : p.ops) {
    if (!op.kernel.empty()) {
      bool known = false;
      for (const std::string &k : kernels)
        known |= k == op.kernel;
      if (!known)
        throw RuntimeError("step '" + p.name + "' calls unknown kernel '" +
                           op.kernel + "'");
    } else {
      if (op.args.size() != 3 || op.m < 1 || op.n < 1 || op.k < 1)
        throw RuntimeError("step '" + p.name + "' has a malformed GEMM");
      auto size = [](const std::string &t) { return t == "bf16" ? 2 : 4; };
      int64_t need[3] = {op.m * op.k * size(op.lhsType),
                         op.k * op.n * size(op.rhsType),
                         op.m * op.n * size(op.resultType)};
      for (int i = 0; i < 3; ++i)
        if (op.args[i].bytes < need[i])
          throw RuntimeError("step '" + p.name +
                             "' has a GEMM operand smaller than its shape");
    }
    for (const BufferRef &r : op.args)
      checkRef(p, r);
  }
  for (const OutputCopy &c : p.copies) {
    checkRef(p, c.source);
    if (c.output < 0 || c.output >= (int64_t)p.outputs.size())
      throw RuntimeError("step '" + p.name + "' copies to a missing output");
  }
}
} // namespace

uint64_t fnv1a64(const void *data, size_t size) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

int64_t StepPlan::inputIndex(const std::string &n) const {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].name == n)
      return i;
  return -1;
}

int64_t StepPlan::outputIndex(const std::string &n) const {
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].name == n)
      return i;
  return -1;
}

const StepPlan &Bundle::step(const std::string &name) const {
  auto it = steps_.find(name);
  if (it == steps_.end())
    throw RuntimeError(path_ + ": the bundle has no step '" + name + "'");
  return it->second;
}

const std::string *Bundle::blob(const std::string &name) const {
  auto it = blobs_.find(name);
  return it == blobs_.end() ? nullptr : &it->second;
}

int64_t Bundle::parameterCount() const {
  int64_t n = 0;
  for (const ParamSpec &p : params_) {
    int64_t size = 1;
    for (int64_t d : p.shape)
      size *= d;
    n += size;
  }
  return n;
}

const std::string &Bundle::kernelLibrary() const {
  const std::string *so = blob("kernels.so");
  if (!so)
    throw RuntimeError(path_ + ": a '" + target_.kind +
                       "' bundle has no CPU kernel library");
  return *so;
}

const std::vector<KernelLaunch> &Bundle::launches(const std::string &kernel) const {
  auto it = launches_.find(kernel);
  if (it == launches_.end())
    throw RuntimeError(path_ + ": kernel '" + kernel + "' has no GPU launches");
  return it->second;
}

namespace {
/// What an error calls a blob.
std::string blobTitle(const std::string &name) {
  if (name == "kernels.so")
    return "the kernel library";
  if (name == "kernels.ptx")
    return "the PTX";
  if (name == "kernels.cubin")
    return "the cubin";
  return "blob " + name;
}

std::string dims(const uint32_t d[3]) {
  return "[" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " +
         std::to_string(d[2]) + "]";
}

/// A kernel's launches: each has an entry, a grid and a block within the
/// limits every CUDA GPU shares, so a bad bundle fails here and not as a
/// launch error on the device.
std::vector<KernelLaunch> launchesOf(const std::string &kernel, const Json &j) {
  auto bad = [&](size_t i, const std::string &what) {
    return RuntimeError("kernel '" + kernel + "': launch " + std::to_string(i) +
                        ": " + what);
  };
  std::vector<KernelLaunch> out;
  const Json::Array &list = j.asArray();
  if (list.empty())
    throw RuntimeError("kernel '" + kernel + "' has no launches");
  for (size_t i = 0; i < list.size(); ++i) {
    const Json &l = list[i];
    KernelLaunch k;
    k.entry = l.at("entry").asString();
    if (k.entry.empty())
      throw bad(i, "the entry symbol is empty");
    for (auto [key, into] : {std::pair{"grid", k.grid}, {"block", k.block}}) {
      const Json::Array &d = l.at(key).asArray();
      if (d.size() != 3)
        throw bad(i, std::string(key) + " must have 3 sizes");
      for (int a = 0; a < 3; ++a) {
        int64_t v = d[a].asInt();
        // Grid x may reach 2^31-1; every other dimension fits 65535.
        int64_t most = std::string(key) == "grid" && a == 0 ? 2147483647 : 65535;
        if (v < 1 || v > most)
          throw bad(i, std::string(key) + " size " + std::to_string(v) +
                           " is outside [1, " + std::to_string(most) + "]");
        into[a] = (uint32_t)v;
      }
    }
    uint64_t threads = (uint64_t)k.block[0] * k.block[1] * k.block[2];
    if (threads > 1024 || k.block[2] > 64)
      throw bad(i, "block " + dims(k.block) + " has " + std::to_string(threads) +
                       " threads; a CUDA block holds at most 1024 (z at most 64)");
    int64_t shared = 0;
    if (const Json *s = l.find("shared_bytes"))
      shared = s->asInt();
    if (shared < 0 || shared > 48 * 1024)
      throw bad(i, "shared_bytes " + std::to_string(shared) +
                       " is outside [0, 49152] (the static shared memory a "
                       "CUDA kernel may declare)");
    k.sharedBytes = (uint32_t)shared;
    if (const Json *c = l.find("cooperative"))
      k.cooperative = c->asBool();
    out.push_back(std::move(k));
  }
  return out;
}
} // namespace

/// The architecture this runtime was built for, named as LLVM's triples
/// name it.
static std::string hostArch() {
#if defined(__x86_64__) || defined(_M_X64)
  return "x86_64";
#elif defined(__aarch64__) || defined(_M_ARM64)
  return "aarch64";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return "powerpc64le";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#else
  return "unknown";
#endif
}

Bundle Bundle::load(const std::string &path) {
  std::string file = readFile(path);
  auto bad = [&](const std::string &what) {
    return RuntimeError(path + ": not a valid fbt bundle: " + what);
  };
  if (file.size() < kHeader)
    throw bad("the file is shorter than the header (" +
              std::to_string(file.size()) + " bytes)");
  if (std::memcmp(file.data(), kMagic, 4) != 0)
    throw bad("wrong magic (is this a bundle written by fbtc?)");
  if (std::memcmp(file.data(), kMagic, 8) != 0)
    throw bad("bundle format version '" + file.substr(4, 4) +
              "' is not the supported 'NDL1'; recompile it with this fbtc");
  uint64_t length = readU64(file, 8);
  if (length > file.size() - kHeader)
    throw bad("the manifest runs past the end of the file (truncated?)");
  std::string text = file.substr(kHeader, length);
  if (fnv1a64(text.data(), text.size()) != readU64(file, 16))
    throw bad("the manifest's checksum does not match (corrupt file)");

  Bundle b;
  b.path_ = path;
  try {
    b.manifest_ = Json::parse(text, path + " manifest");
    const Json &m = b.manifest_;
    if (m.at("format").asString() != "fbt-bundle")
      throw bad("the manifest's format is not 'fbt-bundle'");
    const Json &target = m.at("target");
    b.target_.kind = target.at("kind").asString();
    // CPU and emulated kernels are a shared object for the architecture
    // they were compiled on.
    if (const Json *arch = target.find("arch"))
      if (arch->asString() != hostArch())
        throw RuntimeError(path + ": its kernels were compiled for " + arch->asString() +
                           ", but this machine is " + hostArch() +
                           "; recompile it here with fbtc");
    if (b.target_.kind == "cpu") {
      if (const Json *cpu = target.find("cpu"))
        b.target_.chip = cpu->asString();
    } else if (b.target_.kind == "nvptx") {
      b.target_.chip = target.at("chip").asString();
      if (const Json *f = target.find("features"))
        b.target_.features = f->asString();
    } else if (b.target_.kind == "simt") {
      b.target_.chip = "simt";
    } else {
      throw RuntimeError(path + ": compiled for target '" + b.target_.kind +
                         "', but this runtime runs 'cpu'; recompile with "
                         "fbtc --target=cpu (or --target=sm_90 for an "
                         "NVIDIA GPU: kind 'nvptx')");
    }
    for (const Json &p : m.at("params").asArray())
      b.params_.push_back({p.at("name").asString(), shapeOf(p.at("shape")),
                           p.at("decay").asBool(), p.at("feedback").asBool()});
    for (const Json &k : m.at("kernels").asArray())
      b.kernels_.push_back(k.asString());
    for (const Json::Member &s : m.at("steps").asObject()) {
      StepPlan plan = planOf(s.first, s.second);
      checkPlan(plan, b.kernels_);
      b.steps_[s.first] = std::move(plan);
    }
    if (b.target_.gpu() || b.target_.emulated()) {
      const Json &launches = m.at("launches");
      for (const std::string &k : b.kernels_) {
        const Json *l = launches.find(k);
        if (!l)
          throw RuntimeError("kernel '" + k + "' has no launches");
        b.launches_[k] = launchesOf(k, *l);
      }
    }

    // The blobs, each checked against its checksum.
    uint64_t base = alignTo64(kHeader + length);
    for (const Json::Member &blob : m.at("blobs").asObject()) {
      const std::string &name = blob.first;
      uint64_t offset = blob.second.at("offset").asInt(),
               size = blob.second.at("size").asInt();
      if (base + offset + size > file.size() || base + offset + size < base)
        throw bad(blobTitle(name) + " runs past the end of the file (truncated?)");
      std::string bytes = file.substr(base + offset, size);
      uint64_t sum = std::stoull(blob.second.at("fnv1a64").asString(), nullptr, 16);
      if (fnv1a64(bytes.data(), bytes.size()) != sum)
        throw bad(blobTitle(name) + "'s checksum does not match (corrupt file)");
      b.blobs_[name] = std::move(bytes);
    }
    const char *required = b.target_.gpu() ? "kernels.ptx" : "kernels.so";
    if (!b.blob(required))
      throw bad("a '" + b.target_.kind + "' bundle needs " + blobTitle(required) +
                " (" + required + "), and this one has none");
  } catch (const RuntimeError &e) {
    std::string what = e.what();
    if (what.rfind(path, 0) == 0)
      throw;
    throw bad(what);
  } catch (const std::exception &e) {
    throw bad(e.what());
  }
  return b;
}

} // namespace fbt
