//===- BundleFormat.cpp - the .fbtb format, defined once ------------------===//

#include "runtime/format/BundleFormat.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/base/Hash.h"
#include "runtime/base/LittleEndian.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>

namespace fbt {

void ConstantSpec::fill(void *out, const std::string &step) const {
  auto splat = [&](auto v) {
    std::fill_n(static_cast<decltype(v) *>(out), count, v);
  };
  switch (dtype) {
  case DType::F32:
    return splat((float)value);
  case DType::I32:
    return splat((int32_t)value);
  case DType::I64:
    return splat((int64_t)value);
  default:
    throw RuntimeError("step '" + step + "': constant of unsupported type " +
                       planTypeName(dtype));
  }
}

namespace {

constexpr const char *kRefKinds[] = {"input", "output", "const", "arena"};

std::vector<int64_t> shapeOf(const Json &j) {
  std::vector<int64_t> s;
  for (const Json &d : asArray(j))
    s.push_back(asInt(d));
  return s;
}

DType planTypeOf(const Json &j, const char *what) {
  std::optional<DType> t = parsePlanType(asString(j));
  if (!t)
    throw RuntimeError(std::string(what) + " of element type '" + asString(j) +
                       "' (expected f32, bf16, f16, i32, i64 or i8)");
  return *t;
}

/// The kind `j` names; RuntimeError naming `what` and the kinds there are.
template <class E> E kindOf(const Json &j, const std::string &what) {
  return requireKind<E>(asString(j), what);
}

Json refJson(const BufferRef &r) {
  return Json::array({kRefKinds[(int)r.kind], r.index, r.offset, r.bytes});
}

BufferRef refOf(const Json &j) {
  const Json::array_t &a = asArray(j);
  if (a.size() != 4)
    throw RuntimeError("a buffer reference must have 4 fields");
  BufferRef r;
  const std::string &kind = asString(a[0]);
  bool known = false;
  for (int k = 0; k < 4; ++k)
    if (kind == kRefKinds[k]) {
      r.kind = (BufferRef::Kind)k;
      known = true;
    }
  if (!known)
    throw RuntimeError("unknown buffer kind '" + kind + "'");
  r.index = asInt(a[1]);
  r.offset = asInt(a[2]);
  r.bytes = asInt(a[3]);
  return r;
}

Json tensorJson(const TensorSpec &t) {
  Json o = Json::object({{"name", t.name},
                         {"dtype", planTypeName(t.dtype)},
                         {"shape", t.shape},
                         {"bytes", t.bytes}});
  if (t.param)
    o["param"] = true;
  if (t.updates >= 0)
    o["updates"] = t.updates;
  return o;
}

TensorSpec tensorOf(const Json &j) {
  TensorSpec t;
  t.name = asString(jsonAt(j, "name"));
  t.dtype = planTypeOf(jsonAt(j, "dtype"), ("tensor '" + t.name + "'").c_str());
  t.shape = shapeOf(jsonAt(j, "shape"));
  t.bytes = asInt(jsonAt(j, "bytes"));
  if (const Json *p = jsonFind(j, "param"))
    t.param = asBool(*p);
  if (const Json *u = jsonFind(j, "updates"))
    t.updates = asInt(*u);
  return t;
}

/// Every reference lies inside the buffer it names.
void checkRef(const StepPlan &p, const BufferRef &r) {
  auto inside = [&](int64_t size) {
    return r.offset >= 0 && r.bytes >= 0 && r.offset <= size && r.bytes <= size - r.offset;
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
    throw RuntimeError("step '" + p.name + "' references a buffer outside its bounds");
}

/// Whether two references share a byte.
bool overlap(const BufferRef &a, const BufferRef &b) {
  return a.kind == b.kind && (a.kind == BufferRef::Kind::Arena || a.index == b.index) &&
         a.bytes > 0 && b.bytes > 0 && a.offset < b.offset + b.bytes &&
         b.offset < a.offset + a.bytes;
}

/// A collective names each operand and pairs it with a result of its size;
/// each bucket is started once and waited for once, after its start.
void checkCollective(const StepPlan &p, const PlanOp &op) {
  auto bad = [&](const std::string &what) {
    return RuntimeError("step '" + p.name + "': " + what);
  };
  if (op.isWait()) {
    bool started = false, waited = false;
    for (const PlanOp &o : p.ops) {
      if (&o == &op)
        break;
      started |= o.isCollective() && o.bucket == op.bucket;
      waited |= o.isWait() && o.bucket == op.bucket;
    }
    if (!started || waited)
      throw bad("waits for bucket " + std::to_string(op.bucket) +
                (waited ? " twice" : " before starting it"));
    return;
  }
  std::string c = kindName(op.collective);
  size_t n = op.names.size();
  if (n == 0 || op.args.size() != 2 * n)
    throw bad("a " + c + " needs one name, one operand and one result per tensor");
  if (op.collective == CollectiveKind::AllReduce && !op.shards.empty())
    throw bad("an all_reduce has no shards");
  if (op.collective != CollectiveKind::AllReduce && op.shards.size() != n)
    throw bad("a " + c + " needs one shard per tensor");
  for (size_t i = 0; i < n; ++i)
    if (op.args[i].bytes != op.args[n + i].bytes || op.args[i].bytes % 4)
      throw bad(c + " operand '" + op.names[i] + "' and its result differ in size");
  for (const PlanOp &o : p.ops)
    if (&o != &op && o.isCollective() && o.bucket == op.bucket)
      throw bad("two collectives share bucket " + std::to_string(op.bucket));
}

void checkPlan(const StepPlan &p, const std::vector<std::string> &kernels,
               const EarlyWrites &earlyWrites) {
  for (const PlanOp &op : p.ops) {
    if (op.isKernel()) {
      bool known = false;
      for (const std::string &k : kernels)
        known |= k == op.kernel;
      if (!known)
        throw RuntimeError("step '" + p.name + "' calls unknown kernel '" + op.kernel + "'");
      // A sharded call's results pass their tied operands through.
      int64_t operands = (int64_t)op.args.size() - (int64_t)op.tied.size();
      for (int64_t t : op.tied)
        if (t < -1 || t >= operands)
          throw RuntimeError("step '" + p.name + "': kernel call '" + op.kernel +
                             "' ties a result to operand " + std::to_string(t) + " of " +
                             std::to_string(std::max<int64_t>(operands, 0)));
      if (!op.shard.empty() && op.tied.empty())
        throw RuntimeError("step '" + p.name + "': kernel call '" + op.kernel +
                           "' is sharded but ties no result");
      auto early = earlyWrites.find(op.kernel);
      if (early != earlyWrites.end())
        for (int64_t e : early->second) {
          if (e < 0 || e >= (int64_t)op.args.size())
            throw RuntimeError("step '" + p.name + "': kernel '" + op.kernel +
                               "' writes argument " + std::to_string(e) +
                               " early, but the call has " + std::to_string(op.args.size()));
          for (size_t a = 0; a < op.args.size(); ++a)
            if ((int64_t)a != e && overlap(op.args[e], op.args[a]))
              throw RuntimeError("step '" + p.name + "': kernel '" + op.kernel +
                                 "' writes argument " + std::to_string(e) +
                                 " while it reads the others, but it shares memory "
                                 "with argument " + std::to_string(a));
        }
    } else if (op.isCollective() || op.isWait()) {
      checkCollective(p, op);
    } else {
      if (op.args.size() != 3 || op.m < 1 || op.n < 1 || op.k < 1)
        throw RuntimeError("step '" + p.name + "' has a malformed GEMM");
      int64_t need[3] = {op.m * op.k * (int64_t)dtypeSize(op.lhsType),
                         op.k * op.n * (int64_t)dtypeSize(op.rhsType),
                         op.m * op.n * (int64_t)dtypeSize(op.resultType)};
      for (int i = 0; i < 3; ++i)
        if (op.args[i].bytes < need[i])
          throw RuntimeError("step '" + p.name + "' has a GEMM operand smaller than its shape");
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

std::string dims(const uint32_t d[3]) {
  return "[" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " +
         std::to_string(d[2]) + "]";
}

void putU64(std::string &out, uint64_t v) { appendLittleEndian(out, v); }

uint64_t readU64(const std::string &s, size_t at) {
  return readLittleEndian<uint64_t>(s.data() + at);
}

uint64_t alignTo64(uint64_t v) { return (v + 63) & ~uint64_t(63); }

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

} // namespace

//===----------------------------------------------------------------------===//
// Step plans
//===----------------------------------------------------------------------===//

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

Json toJson(const StepPlan &plan) {
  Json inputs = Json::array(), outputs = Json::array(), constants = Json::array(),
       ops = Json::array(), copies = Json::array();
  for (const TensorSpec &t : plan.inputs)
    inputs.push_back(tensorJson(t));
  for (const TensorSpec &t : plan.outputs)
    outputs.push_back(tensorJson(t));
  for (const ConstantSpec &c : plan.constants)
    constants.push_back(Json::object(
        {{"dtype", planTypeName(c.dtype)}, {"count", c.count}, {"value", c.value}}));
  for (const PlanOp &p : plan.ops) {
    Json args = Json::array();
    for (const BufferRef &r : p.args)
      args.push_back(refJson(r));
    if (p.isKernel()) {
      Json call = Json::object({{"kernel", p.kernel}, {"args", std::move(args)}});
      if (!p.shard.empty()) {
        call["shard"] = p.shard;
        call["tied"] = p.tied;
      }
      ops.push_back(std::move(call));
      continue;
    }
    if (p.isWait()) {
      ops.push_back(Json::object({{"wait", p.bucket}}));
      continue;
    }
    if (p.isCollective()) {
      Json c = Json::object({{"collective", kindName(p.collective)},
                             {"bucket", p.bucket},
                             {"names", p.names},
                             {"args", std::move(args)}});
      if (p.collective != CollectiveKind::AllGather)
        c["reduction"] = kindName(p.reduction);
      if (!p.shards.empty())
        c["shards"] = p.shards;
      ops.push_back(std::move(c));
      continue;
    }
    Json gemm = Json::object({{"gemm", Json::array({p.m, p.n, p.k})},
                              {"transpose", Json::array({p.transposeLhs, p.transposeRhs})}});
    // Element types only where they are not all f32 (bf16 storage).
    if (p.lhsType != DType::F32 || p.rhsType != DType::F32 || p.resultType != DType::F32)
      gemm["types"] = Json::array({planTypeName(p.lhsType), planTypeName(p.rhsType),
                                   planTypeName(p.resultType)});
    gemm["args"] = std::move(args);
    ops.push_back(std::move(gemm));
  }
  for (const OutputCopy &c : plan.copies)
    copies.push_back(Json::object({{"output", c.output}, {"from", refJson(c.source)}}));
  return Json::object({{"name", plan.name},
                       {"kind", kindName(plan.kind)},
                       {"passes", plan.passes},
                       {"arena_bytes", plan.arenaBytes},
                       {"inputs", std::move(inputs)},
                       {"outputs", std::move(outputs)},
                       {"constants", std::move(constants)},
                       {"ops", std::move(ops)},
                       {"copies", std::move(copies)}});
}

StepPlan stepPlanFromJson(const std::string &name, const Json &j,
                          const std::vector<std::string> &kernels,
                          const EarlyWrites &earlyWrites) {
  StepPlan p;
  p.name = name;
  p.kind = kindOf<StepKind>(jsonAt(j, "kind"), "step kind");
  p.passes = asInt(jsonAt(j, "passes"));
  p.arenaBytes = asInt(jsonAt(j, "arena_bytes"));
  for (const Json &t : asArray(jsonAt(j, "inputs")))
    p.inputs.push_back(tensorOf(t));
  for (const Json &t : asArray(jsonAt(j, "outputs")))
    p.outputs.push_back(tensorOf(t));
  for (const Json &c : asArray(jsonAt(j, "constants")))
    p.constants.push_back({planTypeOf(jsonAt(c, "dtype"), "a constant"),
                           asInt(jsonAt(c, "count")), asDouble(jsonAt(c, "value"))});
  for (const Json &o : asArray(jsonAt(j, "ops"))) {
    PlanOp op;
    if (const Json *k = jsonFind(o, "kernel")) {
      op.kind = PlanOp::Kind::Kernel;
      op.kernel = asString(*k);
      if (const Json *s = jsonFind(o, "shard")) {
        op.shard = asString(*s);
        for (const Json &t : asArray(jsonAt(o, "tied")))
          op.tied.push_back(asInt(t));
      }
    } else if (const Json *w = jsonFind(o, "wait")) {
      op.kind = PlanOp::Kind::Wait;
      op.bucket = asInt(*w);
    } else if (const Json *c = jsonFind(o, "collective")) {
      op.kind = PlanOp::Kind::Collective;
      op.collective = kindOf<CollectiveKind>(*c, "collective");
      if (op.collective != CollectiveKind::AllGather)
        op.reduction = kindOf<Reduction>(jsonAt(o, "reduction"), "reduction");
      op.bucket = asInt(jsonAt(o, "bucket"));
      for (const Json &n : asArray(jsonAt(o, "names")))
        op.names.push_back(asString(n));
      if (const Json *s = jsonFind(o, "shards"))
        for (const Json &n : asArray(*s))
          op.shards.push_back(asString(n));
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
        DType *into[3] = {&op.lhsType, &op.rhsType, &op.resultType};
        for (int i = 0; i < 3; ++i) {
          std::optional<DType> d = parsePlanType(asString(ty[i]));
          if (d != DType::F32 && d != DType::BF16)
            throw RuntimeError("a GEMM of element type '" + asString(ty[i]) +
                               "' (expected f32 or bf16)");
          *into[i] = *d;
        }
        if (op.lhsType != op.rhsType)
          throw RuntimeError(std::string("a GEMM's operands must share a type, got ") +
                             planTypeName(op.lhsType) + " and " + planTypeName(op.rhsType));
      }
    }
    if (!op.isWait()) // a wait has no buffers
      for (const Json &a : asArray(jsonAt(o, "args")))
        op.args.push_back(refOf(a));
    p.ops.push_back(std::move(op));
  }
  for (const Json &c : asArray(jsonAt(j, "copies")))
    p.copies.push_back({asInt(jsonAt(c, "output")), refOf(jsonAt(c, "from"))});
  checkPlan(p, kernels, earlyWrites);
  return p;
}

std::string PlanOp::label() const {
  switch (kind) {
  case Kind::Kernel:
    return kernel;
  case Kind::Gemm:
    return "gemm";
  case Kind::Collective:
    return kindName(collective);
  case Kind::Wait:
    return "wait";
  }
  return "";
}

std::string gemmShapeKey(const PlanOp &op) {
  return std::to_string(op.m) + "," + std::to_string(op.n) + "," + std::to_string(op.k) +
         "," + (op.transposeLhs ? "t" : "n") + "," + (op.transposeRhs ? "t" : "n") + "," +
         planTypeName(op.lhsType) + "," + planTypeName(op.rhsType) + "," +
         planTypeName(op.resultType);
}

Json toJson(const EarlyWrites &earlyWrites) {
  Json j = Json::object();
  for (const auto &[kernel, args] : earlyWrites)
    j[kernel] = args;
  return j;
}

EarlyWrites earlyWritesFromJson(const Json &j) {
  EarlyWrites e;
  for (const auto &[kernel, args] : asObject(j))
    for (const Json &a : asArray(args))
      e[kernel].push_back(asInt(a));
  return e;
}

//===----------------------------------------------------------------------===//
// The rest of the manifest
//===----------------------------------------------------------------------===//

Json toJson(const VariantTable &variants) {
  Json j = Json::object();
  for (const auto &[kernel, table] : variants) {
    Json args = Json::array(), builds = Json::array();
    for (DType t : table.args)
      args.push_back(planTypeName(t));
    for (const KernelVariant &v : table.builds) {
      Json config = Json::object();
      for (const auto &[knob, value] : v.config)
        config[knob] = value;
      builds.push_back(Json::object({{"symbol", v.symbol}, {"config", std::move(config)}}));
    }
    j[kernel] = Json::object({{"args", std::move(args)}, {"builds", std::move(builds)}});
  }
  return j;
}

Json toJson(const TunedBuild &t) {
  Json gemms = Json::object();
  for (const auto &[shape, algorithm] : t.gemmAlgorithms)
    gemms[shape] = algorithm;
  return Json::object(
      {{"device", t.device}, {"tuned_at", t.tunedAt}, {"gemm_algorithms", std::move(gemms)}});
}

TunedBuild tunedBuildFromJson(const Json &j) {
  TunedBuild t;
  t.device = jsonAt(j, "device");
  asObject(t.device);
  t.tunedAt = asString(jsonAt(j, "tuned_at"));
  for (const auto &[shape, algorithm] : asObject(jsonAt(j, "gemm_algorithms"))) {
    int64_t a = asInt(algorithm);
    if (a < 0)
      throw RuntimeError("tuned: GEMM '" + shape + "' has a negative algorithm");
    t.gemmAlgorithms[shape] = a;
  }
  return t;
}

VariantTable variantTableFromJson(const Json &j, const std::vector<std::string> &kernels,
                                  const EarlyWrites &earlyWrites) {
  std::set<std::string> known(kernels.begin(), kernels.end()), listed;
  auto writes = [&](const std::string &k) {
    auto it = earlyWrites.find(k);
    return it == earlyWrites.end() ? std::vector<int64_t>() : it->second;
  };
  VariantTable table;
  for (const auto &[kernel, entry] : asObject(j)) {
    std::string where = "variants of kernel '" + kernel + "'";
    if (!known.count(kernel))
      throw RuntimeError(where + ": no such kernel");
    const Json &list = jsonAt(entry, "builds");
    if (asArray(list).empty())
      throw RuntimeError(where + ": none listed");
    KernelVariants &variants = table[kernel];
    for (const Json &a : asArray(jsonAt(entry, "args"))) {
      std::optional<DType> t = parsePlanType(asString(a));
      if (!t)
        throw RuntimeError(where + ": unknown argument type '" + asString(a) + "'");
      variants.args.push_back(*t);
    }
    std::vector<KernelVariant> &out = variants.builds;
    for (const Json &v : asArray(list)) {
      KernelVariant variant{asString(jsonAt(v, "symbol")), {}};
      for (const auto &[knob, value] : asObject(jsonAt(v, "config"))) {
        int64_t n = asInt(value);
        if (n < 0)
          throw RuntimeError(where + ": knob '" + knob + "' is negative");
        variant.config[knob] = n;
      }
      if (out.empty() && variant.symbol != kernel)
        throw RuntimeError(where + ": the first must be the kernel itself, not '" +
                           variant.symbol + "'");
      if (!known.count(variant.symbol))
        throw RuntimeError(where + ": '" + variant.symbol + "' is not a kernel of the bundle");
      if (!listed.insert(variant.symbol).second)
        throw RuntimeError(where + ": '" + variant.symbol + "' is listed twice");
      if (writes(variant.symbol) != writes(kernel))
        throw RuntimeError(where + ": '" + variant.symbol +
                           "' has other early writes than the kernel");
      out.push_back(std::move(variant));
    }
  }
  return table;
}

Json toJson(const KernelLaunch &l) {
  return Json::object({{"entry", l.entry},
                       {"grid", Json::array({l.grid[0], l.grid[1], l.grid[2]})},
                       {"block", Json::array({l.block[0], l.block[1], l.block[2]})},
                       {"shared_bytes", l.sharedBytes},
                       {"cooperative", l.cooperative}});
}

std::vector<KernelLaunch> kernelLaunchesFromJson(const std::string &kernel, const Json &j) {
  auto bad = [&](size_t i, const std::string &what) {
    return RuntimeError("kernel '" + kernel + "': launch " + std::to_string(i) + ": " + what);
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
          throw bad(i, std::string(key) + " size " + std::to_string(v) + " is outside [1, " +
                           std::to_string(most) + "]");
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

Json toJson(const BundleTarget &t) {
  Json j = Json::object({{"kind", kindName(t.kind)}});
  if (t.gpu()) {
    j["chip"] = t.chip;
    j["features"] = t.features;
  } else {
    j["triple"] = t.triple;
    j["arch"] = t.arch;
    if (t.kind == TargetKind::Cpu) {
      j["cpu"] = t.chip;
      if (!t.features.empty())
        j["features"] = t.features;
      if (t.int8Layout != Int8Layout::Rows)
        j["int8_layout"] = kindName(t.int8Layout);
    }
  }
  if (!t.storage.empty())
    j["storage"] = t.storage;
  return j;
}

BundleTarget bundleTargetFromJson(const Json &j) {
  BundleTarget t;
  std::string kind = asString(jsonAt(j, "kind"));
  std::optional<TargetKind> known = parseKind<TargetKind>(kind);
  if (!known)
    throw RuntimeError("compiled for target '" + kind +
                       "', which this runtime does not run (it runs the kinds " +
                       kindNames<TargetKind>() +
                       "); recompile with fbtc --target=cpu (or --target=sm_90 "
                       "for an NVIDIA GPU: kind 'nvptx')");
  t.kind = *known;
  auto optional = [&](const char *key, std::string &into) {
    if (const Json *v = jsonFind(j, key))
      into = asString(*v);
  };
  optional("triple", t.triple);
  optional("arch", t.arch);
  optional("storage", t.storage);
  switch (t.kind) {
  case TargetKind::Cpu:
    optional("cpu", t.chip);
    optional("features", t.features);
    if (const Json *v = jsonFind(j, "int8_layout"))
      t.int8Layout = requireKind<Int8Layout>(asString(*v), "target.int8_layout");
    break;
  case TargetKind::Nvptx:
    t.chip = asString(jsonAt(j, "chip"));
    optional("features", t.features);
    break;
  case TargetKind::Simt:
    t.chip = "simt";
    break;
  }
  return t;
}

Json toJson(const ParamSpec &p) {
  return Json::object(
      {{"name", p.name}, {"shape", p.shape}, {"decay", p.decay}, {"feedback", p.feedback}});
}

ParamSpec paramSpecFromJson(const Json &j) {
  return {asString(jsonAt(j, "name")), shapeOf(jsonAt(j, "shape")),
          asBool(jsonAt(j, "decay")), asBool(jsonAt(j, "feedback"))};
}

Json toJson(const BundleManifest &m) {
  Json params = Json::array(), steps = Json::object();
  for (const ParamSpec &p : m.params)
    params.push_back(toJson(p));
  for (const auto &[name, plan] : m.steps)
    steps[name] = toJson(plan);
  Json j = Json::object({{"format", "fbt-bundle"},
                         {"target", toJson(m.target)},
                         {"model", m.model},
                         {"params", std::move(params)},
                         {"kernels", m.kernels},
                         {"largest_arena_bytes", m.largestArenaBytes},
                         {"steps", std::move(steps)}});
  if (!m.earlyWrites.empty())
    j["early_writes"] = toJson(m.earlyWrites);
  if (!m.variants.empty())
    j["variants"] = toJson(m.variants);
  if (m.tuned)
    j["tuned"] = toJson(*m.tuned);
  if (m.target.gpu() || m.target.emulated()) {
    Json launches = Json::object();
    for (const auto &[kernel, list] : m.launches) {
      Json each = Json::array();
      for (const KernelLaunch &l : list)
        each.push_back(toJson(l));
      launches[kernel] = std::move(each);
    }
    j["launches"] = std::move(launches);
  }
  return j;
}

BundleManifest bundleManifestFromJson(const Json &j) {
  if (asString(jsonAt(j, "format")) != "fbt-bundle")
    throw RuntimeError("the manifest's format is not 'fbt-bundle'");
  BundleManifest m;
  m.target = bundleTargetFromJson(jsonAt(j, "target"));
  m.model = jsonAt(j, "model");
  asObject(m.model);
  for (const Json &p : asArray(jsonAt(j, "params")))
    m.params.push_back(paramSpecFromJson(p));
  for (const Json &k : asArray(jsonAt(j, "kernels")))
    m.kernels.push_back(asString(k));
  if (const Json *a = jsonFind(j, "largest_arena_bytes"))
    m.largestArenaBytes = asInt(*a);
  if (const Json *e = jsonFind(j, "early_writes"))
    m.earlyWrites = earlyWritesFromJson(*e);
  for (const auto &[name, step] : asObject(jsonAt(j, "steps")))
    m.steps[name] = stepPlanFromJson(name, step, m.kernels, m.earlyWrites);
  if (const Json *v = jsonFind(j, "variants"))
    m.variants = variantTableFromJson(*v, m.kernels, m.earlyWrites);
  if (const Json *t = jsonFind(j, "tuned"))
    m.tuned = tunedBuildFromJson(*t);
  if (m.target.gpu() || m.target.emulated()) {
    const Json &launches = jsonAt(j, "launches");
    for (const std::string &k : m.kernels) {
      const Json *l = jsonFind(launches, k);
      if (!l)
        throw RuntimeError("kernel '" + k + "' has no launches");
      m.launches[k] = kernelLaunchesFromJson(k, *l);
    }
  }
  return m;
}

//===----------------------------------------------------------------------===//
// The container
//===----------------------------------------------------------------------===//

std::string encodeBundle(Json manifest, const BundleBlobs &blobs) {
  Json table = Json::object();
  uint64_t offset = 0;
  for (const auto &[name, bytes] : blobs) {
    // Hex strings: JSON readers in other languages lose integers past 2^53.
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx",
                  (unsigned long long)fnv1a64(bytes.data(), bytes.size()));
    table[name] = Json::object({{"offset", offset}, {"size", bytes.size()}, {"fnv1a64", hex}});
    offset = alignTo64(offset + bytes.size());
  }
  manifest["blobs"] = std::move(table);
  std::string text = dumpJson(manifest);

  std::string out(kBundleMagic, sizeof kBundleMagic);
  putU64(out, text.size());
  putU64(out, fnv1a64(text.data(), text.size()));
  out += text;
  out.resize(alignTo64(out.size()), ' '); // padding: JSON whitespace
  for (const auto &blob : blobs) {
    out += blob.second;
    out.resize(alignTo64(out.size()), '\0');
  }
  return out;
}

void writeBundleFile(const std::string &path, Json manifest, const BundleBlobs &blobs) {
  std::string bytes = encodeBundle(std::move(manifest), blobs);
  writeFileAtomic(path, {bytes});
}

DecodedBundle decodeBundle(const std::string &file, const std::string &path) {
  auto bad = [&](const std::string &what) {
    return RuntimeError(path + ": not a valid fbt bundle: " + what);
  };
  if (file.size() < kBundleHeaderBytes)
    throw bad("the file is shorter than the header (" + std::to_string(file.size()) +
              " bytes)");
  if (std::memcmp(file.data(), kBundleMagic, 4) != 0)
    throw bad("wrong magic (is this a bundle written by fbtc?)");
  if (std::memcmp(file.data(), kBundleMagic, 8) != 0)
    throw bad("bundle format version '" + file.substr(4, 4) +
              "' is not the supported 'NDL2'; recompile it with this fbtc");
  uint64_t length = readU64(file, 8);
  if (length > file.size() - kBundleHeaderBytes)
    throw bad("the manifest runs past the end of the file (truncated?)");
  std::string text = file.substr(kBundleHeaderBytes, length);
  if (fnv1a64(text.data(), text.size()) != readU64(file, 16))
    throw bad("the manifest's checksum does not match (corrupt file)");

  DecodedBundle d;
  try {
    d.manifest = parseJson(text, path + " manifest");
    uint64_t base = alignTo64(kBundleHeaderBytes + length);
    for (const auto &[name, blob] : asObject(jsonAt(d.manifest, "blobs"))) {
      int64_t offset = asInt(jsonAt(blob, "offset")), size = asInt(jsonAt(blob, "size"));
      if (offset < 0 || size < 0 || base > file.size() ||
          (uint64_t)offset > file.size() - base ||
          (uint64_t)size > file.size() - base - offset)
        throw bad(blobTitle(name) + " runs past the end of the file (truncated?)");
      std::string bytes = file.substr(base + offset, size);
      const std::string &sum = asString(jsonAt(blob, "fnv1a64"));
      char *end = nullptr;
      unsigned long long want = std::strtoull(sum.c_str(), &end, 16);
      if (sum.empty() || *end)
        throw bad(blobTitle(name) + "'s checksum '" + sum + "' is not hexadecimal");
      if (fnv1a64(bytes.data(), bytes.size()) != want)
        throw bad(blobTitle(name) + "'s checksum does not match (corrupt file)");
      d.blobs[name] = std::move(bytes);
    }
  } catch (const RuntimeError &e) {
    std::string what = e.what();
    if (what.rfind(path, 0) == 0)
      throw;
    throw bad(what);
  }
  return d;
}

} // namespace fbt
