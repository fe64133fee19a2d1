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
  for (const Json &d : asArray(j))
    s.push_back(asInt(d));
  return s;
}

TensorSpec tensorOf(const Json &j) {
  TensorSpec t;
  t.name = asString(jsonAt(j, "name"));
  t.dtype = asString(jsonAt(j, "dtype"));
  t.shape = shapeOf(jsonAt(j, "shape"));
  t.bytes = asInt(jsonAt(j, "bytes"));
  if (const Json *p = jsonFind(j, "param"))
    t.param = asBool(*p);
  if (const Json *u = jsonFind(j, "updates"))
    t.updates = asInt(*u);
  return t;
}

BufferRef refOf(const Json &j) {
  const Json::array_t &a = asArray(j);
  if (a.size() != 4)
    throw RuntimeError("a buffer reference must have 4 fields");
  BufferRef r;
  const std::string &kind = asString(a[0]);
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
  r.index = asInt(a[1]);
  r.offset = asInt(a[2]);
  r.bytes = asInt(a[3]);
  return r;
}

StepPlan planOf(const std::string &name, const Json &j) {
  StepPlan p;
  p.name = name;
  p.kind = asString(jsonAt(j, "kind"));
  p.passes = asInt(jsonAt(j, "passes"));
  p.arenaBytes = asInt(jsonAt(j, "arena_bytes"));
  for (const Json &t : asArray(jsonAt(j, "inputs")))
    p.inputs.push_back(tensorOf(t));
  for (const Json &t : asArray(jsonAt(j, "outputs")))
    p.outputs.push_back(tensorOf(t));
  for (const Json &c : asArray(jsonAt(j, "constants")))
    p.constants.push_back({asString(jsonAt(c, "dtype")), asInt(jsonAt(c, "count")),
                           asDouble(jsonAt(c, "value"))});
  for (const Json &o : asArray(jsonAt(j, "ops"))) {
    PlanOp op;
    if (const Json *k = jsonFind(o, "kernel")) {
      op.kernel = asString(*k);
    } else {
      const Json::array_t &g = asArray(jsonAt(o, "gemm"));
      const Json::array_t &t = asArray(jsonAt(o, "transpose"));
      if (g.size() != 3 || t.size() != 2)
        throw RuntimeError("a GEMM needs [m, n, k] and two transposes");
      op.m = asInt(g[0]);
      op.n = asInt(g[1]);
      op.k = asInt(g[2]);
      op.transposeLhs = asBool(t[0]);
      op.transposeRhs = asBool(t[1]);
      if (const Json *types = jsonFind(o, "types")) {
        const Json::array_t &ty = asArray(*types);
        if (ty.size() != 3)
          throw RuntimeError("a GEMM's types are [lhs, rhs, result]");
        op.lhsType = asString(ty[0]);
        op.rhsType = asString(ty[1]);
        op.resultType = asString(ty[2]);
        for (const std::string *s : {&op.lhsType, &op.rhsType, &op.resultType})
          if (*s != "f32" && *s != "bf16")
            throw RuntimeError("a GEMM of element type '" + *s +
                               "' (expected f32 or bf16)");
        if (op.lhsType != op.rhsType)
          throw RuntimeError("a GEMM's operands must share a type, got " +
                             op.lhsType + " and " + op.rhsType);
      }
    }
    for (const Json &a : asArray(jsonAt(o, "args")))
      op.args.push_back(refOf(a));
    p.ops.push_back(std::move(op));
  }
  for (const Json &c : asArray(jsonAt(j, "copies")))
    p.copies.push_back({asInt(jsonAt(c, "output")), refOf(jsonAt(c, "from"))});
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
  const Json::array_t &list = asArray(j);
  if (list.empty())
    throw RuntimeError("kernel '" + kernel + "' has no launches");
  for (size_t i = 0; i < list.size(); ++i) {
    const Json &l = list[i];
    KernelLaunch k;
    k.entry = asString(jsonAt(l, "entry"));
    if (k.entry.empty())
      throw bad(i, "the entry symbol is empty");
    for (auto [key, into] : {std::pair{"grid", k.grid}, {"block", k.block}}) {
      const Json::array_t &d = asArray(jsonAt(l, key));
      if (d.size() != 3)
        throw bad(i, std::string(key) + " must have 3 sizes");
      for (int a = 0; a < 3; ++a) {
        int64_t v = asInt(d[a]);
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
    if (const Json *s = jsonFind(l, "shared_bytes"))
      shared = asInt(*s);
    if (shared < 0 || shared > 48 * 1024)
      throw bad(i, "shared_bytes " + std::to_string(shared) +
                       " is outside [0, 49152] (the static shared memory a "
                       "CUDA kernel may declare)");
    k.sharedBytes = (uint32_t)shared;
    if (const Json *c = jsonFind(l, "cooperative"))
      k.cooperative = asBool(*c);
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
    b.manifest_ = parseJson(text, path + " manifest");
    const Json &m = b.manifest_;
    if (asString(jsonAt(m, "format")) != "fbt-bundle")
      throw bad("the manifest's format is not 'fbt-bundle'");
    const Json &target = jsonAt(m, "target");
    b.target_.kind = asString(jsonAt(target, "kind"));
    // CPU and emulated kernels are a shared object for the architecture
    // they were compiled on.
    if (const Json *arch = jsonFind(target, "arch"))
      if (asString(*arch) != hostArch())
        throw RuntimeError(path + ": its kernels were compiled for " + asString(*arch) +
                           ", but this machine is " + hostArch() +
                           "; recompile it here with fbtc");
    if (b.target_.kind == "cpu") {
      if (const Json *cpu = jsonFind(target, "cpu"))
        b.target_.chip = asString(*cpu);
    } else if (b.target_.kind == "nvptx") {
      b.target_.chip = asString(jsonAt(target, "chip"));
      if (const Json *f = jsonFind(target, "features"))
        b.target_.features = asString(*f);
    } else if (b.target_.kind == "simt") {
      b.target_.chip = "simt";
    } else {
      throw RuntimeError(path + ": compiled for target '" + b.target_.kind +
                         "', but this runtime runs 'cpu'; recompile with "
                         "fbtc --target=cpu (or --target=sm_90 for an "
                         "NVIDIA GPU: kind 'nvptx')");
    }
    for (const Json &p : asArray(jsonAt(m, "params")))
      b.params_.push_back({asString(jsonAt(p, "name")), shapeOf(jsonAt(p, "shape")),
                           asBool(jsonAt(p, "decay")), asBool(jsonAt(p, "feedback"))});
    for (const Json &k : asArray(jsonAt(m, "kernels")))
      b.kernels_.push_back(asString(k));
    for (const auto &[name, step] : asObject(jsonAt(m, "steps"))) {
      StepPlan plan = planOf(name, step);
      checkPlan(plan, b.kernels_);
      b.steps_[name] = std::move(plan);
    }
    if (b.target_.gpu() || b.target_.emulated()) {
      const Json &launches = jsonAt(m, "launches");
      for (const std::string &k : b.kernels_) {
        const Json *l = jsonFind(launches, k);
        if (!l)
          throw RuntimeError("kernel '" + k + "' has no launches");
        b.launches_[k] = launchesOf(k, *l);
      }
    }

    // The blobs, each checked against its checksum.
    uint64_t base = alignTo64(kHeader + length);
    for (const auto &[name, blob] : asObject(jsonAt(m, "blobs"))) {
      uint64_t offset = asInt(jsonAt(blob, "offset")),
               size = asInt(jsonAt(blob, "size"));
      if (base + offset + size > file.size() || base + offset + size < base)
        throw bad(blobTitle(name) + " runs past the end of the file (truncated?)");
      std::string bytes = file.substr(base + offset, size);
      uint64_t sum = std::stoull(asString(jsonAt(blob, "fnv1a64")), nullptr, 16);
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
