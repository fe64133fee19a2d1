//===- BundleFormatTest.cpp - the format's structs, JSON and container ----===//
//
// fbtc writes plans, launches and targets through toJson and the runtime
// reads them back through the *FromJson readers: whatever one writes the
// other must read back equal, and the container must return the manifest
// and blobs it was given.
//
//===----------------------------------------------------------------------===//

#include "runtime/base/Error.h"
#include "runtime/format/BundleFormat.h"

#include <gtest/gtest.h>

namespace fbt {
namespace {

StepPlan samplePlan() {
  StepPlan p;
  p.name = "decode_step";
  p.kind = StepKind::Decode;
  p.arenaBytes = 4096;
  p.inputs.push_back({"input_ids", DType::I32, {2, 1}, 8});
  p.inputs.push_back({"w", DType::F32, {4, 4}, 64, /*param=*/true});
  p.outputs.push_back({"logits", DType::F32, {2, 4}, 32});
  p.outputs.push_back({"w_out", DType::F32, {4, 4}, 64, false, /*updates=*/1});
  p.constants.push_back({DType::I64, 3, -7});
  PlanOp gemm;
  gemm.m = 2, gemm.n = 4, gemm.k = 4;
  gemm.transposeRhs = true;
  gemm.lhsType = gemm.rhsType = DType::BF16;
  gemm.args = {{BufferRef::Kind::Arena, 0, 0, 16},
               {BufferRef::Kind::Arena, 0, 64, 32},
               {BufferRef::Kind::Output, 0, 0, 32}};
  p.ops.push_back(gemm);
  PlanOp call;
  call.kind = PlanOp::Kind::Kernel;
  call.kernel = "k0_norm";
  call.args = {{BufferRef::Kind::Input, 0, 0, 8}, {BufferRef::Kind::Const, 0, 0, 24}};
  p.ops.push_back(call);
  p.copies.push_back({1, {BufferRef::Kind::Input, 1, 0, 64}});
  return p;
}

void expectSameRef(const BufferRef &a, const BufferRef &b) {
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.offset, b.offset);
  EXPECT_EQ(a.bytes, b.bytes);
}

TEST(BundleFormatTest, PlansReadBackAsWritten) {
  StepPlan p = samplePlan();
  StepPlan q = stepPlanFromJson(p.name, toJson(p), {"k0_norm"});
  EXPECT_EQ(q.kind, p.kind);
  EXPECT_EQ(q.arenaBytes, p.arenaBytes);
  ASSERT_EQ(q.inputs.size(), 2u);
  EXPECT_EQ(q.inputs[0].dtype, DType::I32);
  EXPECT_TRUE(q.inputs[1].param);
  EXPECT_EQ(q.outputs[1].updates, 1);
  EXPECT_EQ(q.constants[0].dtype, DType::I64);
  EXPECT_EQ(q.constants[0].value, -7);
  EXPECT_EQ(q.constants[0].bytes(), 24);
  ASSERT_EQ(q.ops.size(), 2u);
  EXPECT_EQ(q.ops[0].lhsType, DType::BF16);
  EXPECT_EQ(q.ops[0].resultType, DType::F32);
  EXPECT_TRUE(q.ops[0].transposeRhs);
  EXPECT_FALSE(q.ops[0].transposeLhs);
  EXPECT_EQ(q.ops[1].kernel, "k0_norm");
  for (size_t i = 0; i < p.ops.size(); ++i)
    for (size_t a = 0; a < p.ops[i].args.size(); ++a)
      expectSameRef(q.ops[i].args[a], p.ops[i].args[a]);
  expectSameRef(q.copies[0].source, p.copies[0].source);
  // Written again, the same JSON.
  EXPECT_EQ(dumpJson(toJson(q)), dumpJson(toJson(p)));
}

TEST(BundleFormatTest, CollectivesAndWaitsReadBackTyped) {
  StepPlan p = samplePlan();
  PlanOp reduce;
  reduce.kind = PlanOp::Kind::Collective;
  reduce.collective = CollectiveKind::ReduceScatter;
  reduce.reduction = Reduction::Sum;
  reduce.bucket = 0;
  reduce.names = {"grad.w"};
  reduce.shards = {"w"};
  reduce.args = {{BufferRef::Kind::Arena, 0, 0, 64}, {BufferRef::Kind::Arena, 0, 128, 64}};
  PlanOp wait;
  wait.kind = PlanOp::Kind::Wait;
  wait.bucket = 0;
  p.ops.push_back(reduce);
  p.ops.push_back(wait);
  StepPlan q = stepPlanFromJson(p.name, toJson(p), {"k0_norm"});
  ASSERT_EQ(q.ops.size(), 4u);
  std::vector<std::string> labels;
  for (const PlanOp &op : q.ops)
    labels.push_back(op.label());
  EXPECT_EQ(labels, (std::vector<std::string>{"gemm", "k0_norm", "reduce_scatter", "wait"}));
  EXPECT_TRUE(q.ops[0].isGemm());
  EXPECT_TRUE(q.ops[1].isKernel());
  EXPECT_EQ(q.ops[2].collective, CollectiveKind::ReduceScatter);
  EXPECT_EQ(q.ops[2].reduction, Reduction::Sum);
  EXPECT_EQ(q.ops[2].shards, reduce.shards);
  EXPECT_TRUE(q.ops[3].isWait());
  EXPECT_EQ(q.ops[3].bucket, 0);
  EXPECT_EQ(dumpJson(toJson(q)), dumpJson(toJson(p)));

  // Kinds are read once, here: an unknown one is refused by name.
  auto error = [&](const Json &j) {
    try {
      stepPlanFromJson(p.name, j, {"k0_norm"});
    } catch (const RuntimeError &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Json j = toJson(p);
  j["ops"][2]["collective"] = "broadcast";
  EXPECT_NE(error(j).find("unknown collective 'broadcast' (expected one of \"all_reduce\""),
            std::string::npos)
      << error(j);
  j = toJson(p);
  j["ops"][2]["reduction"] = "max";
  EXPECT_NE(error(j).find("unknown reduction 'max'"), std::string::npos) << error(j);
  j = toJson(p);
  j["kind"] = "serve";
  EXPECT_NE(error(j).find("unknown step kind 'serve'"), std::string::npos) << error(j);
  // A wait before its bucket starts.
  std::swap(p.ops[2], p.ops[3]);
  EXPECT_NE(error(toJson(p)).find("waits for bucket 0 before starting it"), std::string::npos);
}

TEST(BundleFormatTest, ReadingChecksThePlan) {
  StepPlan p = samplePlan();
  EXPECT_THROW(stepPlanFromJson(p.name, toJson(p), {}), RuntimeError); // unknown kernel
  p.ops[1].args[0].bytes = 9; // past input 0's 8 bytes
  EXPECT_THROW(stepPlanFromJson(p.name, toJson(p), {"k0_norm"}), RuntimeError);
  Json j = toJson(samplePlan());
  j["inputs"][0]["dtype"] = "f64";
  try {
    stepPlanFromJson("s", j, {"k0_norm"});
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_STREQ(e.what(), "tensor 'input_ids' of element type 'f64' (expected f32, bf16, "
                           "f16, i32, i64 or i8)");
  }
}

TEST(BundleFormatTest, EarlyWritesMayShareNoByteWithTheOtherArguments) {
  StepPlan p = samplePlan();
  EarlyWrites early = earlyWritesFromJson(toJson(EarlyWrites{{"k0_norm", {1}}}));
  ASSERT_EQ(early.at("k0_norm"), std::vector<int64_t>{1});
  EXPECT_NO_THROW(stepPlanFromJson(p.name, toJson(p), {"k0_norm"}, early));
  // The call's argument 1 moved onto argument 0's bytes of input 0.
  p.ops[1].args[1] = {BufferRef::Kind::Input, 0, 4, 4};
  EXPECT_NO_THROW(stepPlanFromJson(p.name, toJson(p), {"k0_norm"})); // no contract
  try {
    stepPlanFromJson(p.name, toJson(p), {"k0_norm"}, early);
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_STREQ(e.what(), "step 'decode_step': kernel 'k0_norm' writes argument 1 while it "
                           "reads the others, but it shares memory with argument 0");
  }
  // Arena ranges that only touch do not overlap.
  p.ops[1].args = {{BufferRef::Kind::Arena, 0, 0, 64}, {BufferRef::Kind::Arena, 0, 64, 64}};
  EXPECT_NO_THROW(stepPlanFromJson(p.name, toJson(p), {"k0_norm"}, early));
  EXPECT_THROW(stepPlanFromJson(p.name, toJson(p), {"k0_norm"}, {{"k0_norm", {2}}}),
               RuntimeError); // no argument 2
}

TEST(BundleFormatTest, LaunchesTargetsAndParamsReadBack) {
  KernelLaunch l;
  l.entry = "k0_norm_0";
  l.grid[0] = 96;
  l.block[0] = 256;
  l.sharedBytes = 1024;
  l.cooperative = true;
  Json table = Json::array({toJson(l)});
  KernelLaunch back = kernelLaunchesFromJson("k0_norm", table)[0];
  EXPECT_EQ(back.entry, l.entry);
  EXPECT_EQ(back.grid[0], 96u);
  EXPECT_EQ(back.block[1], 1u);
  EXPECT_EQ(back.sharedBytes, 1024u);
  EXPECT_TRUE(back.cooperative);

  BundleTarget cpu{TargetKind::Cpu, "x86-64-v3", "+avx2,+fma", "x86_64-pc-linux-gnu", "x86_64",
                   ""};
  BundleTarget t = bundleTargetFromJson(toJson(cpu));
  EXPECT_EQ(t.chip, "x86-64-v3");
  EXPECT_EQ(t.features, "+avx2,+fma"); // what the CPU must have to run its kernels
  EXPECT_EQ(t.triple, cpu.triple);
  EXPECT_EQ(t.arch, "x86_64");
  EXPECT_EQ(t.kind, TargetKind::Cpu);
  EXPECT_EQ(t.int8Layout, Int8Layout::Rows); // absent: as bundles before it
  EXPECT_FALSE(toJson(cpu).contains("int8_layout"));
  cpu.int8Layout = Int8Layout::Interleaved16;
  EXPECT_EQ(bundleTargetFromJson(toJson(cpu)).int8Layout, Int8Layout::Interleaved16);
  Json odd = toJson(cpu);
  odd["int8_layout"] = "columns";
  try {
    bundleTargetFromJson(odd);
    ADD_FAILURE() << "an unknown int8 layout was accepted";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("unknown target.int8_layout 'columns'"),
              std::string::npos)
        << e.what();
  }
  BundleTarget gpu{TargetKind::Nvptx, "sm_90", "+ptx80", "", "", "bf16"};
  t = bundleTargetFromJson(toJson(gpu));
  EXPECT_TRUE(t.gpu());
  EXPECT_EQ(t.features, "+ptx80");
  EXPECT_EQ(t.storage, "bf16");

  ParamSpec p{"model.embed_tokens.weight", {256, 64}, true, false};
  ParamSpec q = paramSpecFromJson(toJson(p));
  EXPECT_EQ(q.name, p.name);
  EXPECT_EQ(q.shape, p.shape);
  EXPECT_TRUE(q.decay);
}

TEST(BundleFormatTest, VariantsAndTunedBuildsReadBack) {
  VariantTable v;
  v["k0_norm"] = {{DType::F32, DType::BF16},
                  {{"k0_norm", {{"row_threads", 256}}}, {"k0_norm__v1", {{"row_threads", 512}}}}};
  std::vector<std::string> kernels = {"k0_norm", "k0_norm__v1", "k1_loss"};
  EXPECT_EQ(variantTableFromJson(toJson(v), kernels, {}), v);

  auto refused = [&](VariantTable bad, const EarlyWrites &e, const std::string &why) {
    try {
      variantTableFromJson(toJson(bad), kernels, e);
      ADD_FAILURE() << "accepted: " << why;
    } catch (const RuntimeError &err) {
      EXPECT_NE(std::string(err.what()).find(why), std::string::npos) << err.what();
    }
  };
  VariantTable bad = v;
  std::swap(bad["k0_norm"].builds[0], bad["k0_norm"].builds[1]);
  refused(bad, {}, "the first must be the kernel itself");
  bad = v;
  bad["k0_norm"].builds[1].symbol = "k0_norm__v9";
  refused(bad, {}, "'k0_norm__v9' is not a kernel of the bundle");
  bad = v;
  bad["k0_norm"].builds.push_back(bad["k0_norm"].builds[1]);
  refused(bad, {}, "listed twice");
  refused(v, {{"k0_norm", {1}}}, "other early writes than the kernel");
  EXPECT_NO_THROW(variantTableFromJson(toJson(v), kernels,
                                       {{"k0_norm", {1}}, {"k0_norm__v1", {1}}}));

  TunedBuild t{Json::object({{"kind", "cuda"}, {"sm", 90}}), "2026-12-02T00:00:00Z",
               {{"64,256,768,n,t,bf16,bf16,f32", 3}}};
  TunedBuild u = tunedBuildFromJson(toJson(t));
  EXPECT_EQ(u.device, t.device);
  EXPECT_EQ(u.tunedAt, t.tunedAt);
  EXPECT_EQ(u.gemmAlgorithms, t.gemmAlgorithms);
}

TEST(BundleFormatTest, TheContainerReturnsWhatItWasGiven) {
  Json manifest = Json::object({{"format", "fbt-bundle"}, {"n", 3}});
  std::string so(100, 'x'), ptx = "ptx";
  std::string file = encodeBundle(manifest, {{"kernels.so", so}, {"kernels.ptx", ptx}});
  EXPECT_EQ(file.compare(0, 8, "FBTBNDL2"), 0);
  DecodedBundle d = decodeBundle(file, "m.fbtb");
  EXPECT_EQ(asInt(jsonAt(d.manifest, "n")), 3);
  EXPECT_EQ(d.blobs.at("kernels.so"), so);
  EXPECT_EQ(d.blobs.at("kernels.ptx"), ptx);
  // The second blob starts 64-aligned in the blob area.
  EXPECT_EQ(asInt(jsonAt(jsonAt(jsonAt(d.manifest, "blobs"), "kernels.ptx"), "offset")), 128);

  std::string flipped = file;
  flipped[flipped.find(ptx)] ^= 1;
  EXPECT_THROW(decodeBundle(flipped, "m.fbtb"), RuntimeError);
  EXPECT_THROW(decodeBundle(file.substr(0, 30), "m.fbtb"), RuntimeError);
  try {
    decodeBundle(file.substr(0, 10), "m.fbtb");
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_EQ(std::string(e.what()).rfind("m.fbtb: not a valid fbt bundle: ", 0), 0u);
  }
}

} // namespace
} // namespace fbt
