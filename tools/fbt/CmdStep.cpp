//===- CmdStep.cpp - fbt step: training steps on given tensors ------------===//
//
// The numerics harness: parameters and a batch come from safetensors files,
// N optimizer steps run on the same batch, and the losses, the first step's
// gradients (before clipping) and the final parameters go to a safetensors
// file for comparison with an independent reference.
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"

#include "runtime/base/Error.h"
#include "runtime/format/Safetensors.h"
#include "runtime/format/StepNames.h"
#include "runtime/session/Session.h"

#include <cstdio>
#include <cstring>

namespace fbt {

int runStep(int argc, char **argv) {
  CommandLine args("fbt step", "Runs N (default 1) training steps of train_k<K> on one batch.");
  args.positional("BUNDLE", "the compiled bundle")
      .text("params", "P.safetensors",
            "parameters by name (moments optional, zero if absent) (required)")
      .text("batch", "B.safetensors",
            "input_ids, targets (I32 [B, T]), seed (I64 [1]), lr (F32 [N]) (required)")
      .integer("passes", "K", "the training step train_k<K> to run (default 1)")
      .integer("steps", "N", "training steps to run (default 1)")
      .text("out", "OUT.safetensors",
            "loss [N], pass_losses [N, K], grad_norm [N], grad.<name> (first step, "
            "before clipping) and the parameters after N steps (required)");
  if (!args.parse(argc, argv))
    return 0;
  Session s(args.require("BUNDLE"));
  int64_t k = args.getInt("passes", 1), n = args.getInt("steps", 1);
  if (!s.bundle().hasStep(step::train(k)))
    throw RuntimeError("the bundle has no training step for K=" + std::to_string(k));
  if (n < 1)
    throw RuntimeError("--steps must be >= 1");
  if (!args.has("params") || !args.has("batch") || !args.has("out"))
    throw RuntimeError("--params, --batch and --out are required (see --help)");
  s.loadCheckpoint(args.get("params"));
  s.state().step = 0;

  std::string batchPath = args.get("batch");
  SafetensorsFile batch = readSafetensors(batchPath);
  const StepPlan &plan = s.bundle().step(step::train(k));
  auto tensor = [&](const char *name, DType dtype, std::vector<int64_t> shape) {
    const Tensor &t = batch.at(name);
    if (t.dtype != dtype || t.shape != shape)
      throw RuntimeError(batchPath + ": '" + name + "' must be " + dtypeName(dtype) +
                         " " + shapeString(shape) + ", got " + dtypeName(t.dtype) +
                         " " + shapeString(t.shape));
    return &t;
  };
  std::vector<int64_t> bt = plan.inputs[plan.inputIndex("input_ids")].shape;
  const Tensor *ids = tensor("input_ids", DType::I32, bt);
  const Tensor *targets = tensor("targets", DType::I32, bt);
  const Tensor *seedT = tensor("seed", DType::I64, {1});
  const Tensor *lrT = tensor("lr", DType::F32, {n});
  int64_t vocab = s.model().vocabSize;
  for (int64_t i = 0; i < ids->numElements(); ++i)
    if (ids->data<int32_t>()[i] < 0 || ids->data<int32_t>()[i] >= vocab)
      throw RuntimeError(batchPath + ": input_ids[" + std::to_string(i) +
                         "] is outside the vocabulary");
  uint64_t seed = (uint64_t)seedT->data<int64_t>()[0];

  std::vector<AlignedBuffer> grads;
  s.gradientStep(k, ids->data<int32_t>(), targets->data<int32_t>(), seed, &grads);
  std::vector<float> losses, passLosses, norms;
  for (int64_t i = 0; i < n; ++i) {
    StepResult r = s.trainStep(k, ids->data<int32_t>(), targets->data<int32_t>(),
                               seed, lrT->data<float>()[i]);
    losses.push_back(r.loss);
    passLosses.insert(passLosses.end(), r.passLosses.begin(), r.passLosses.end());
    norms.push_back(r.gradNorm);
  }

  std::vector<Tensor> out = {Tensor::fromF32("loss", {n}, losses),
                             Tensor::fromF32("pass_losses", {n, k}, passLosses),
                             Tensor::fromF32("grad_norm", {n}, norms)};
  for (size_t i = 0; i < s.bundle().params().size(); ++i) {
    const ParamSpec &p = s.bundle().params()[i];
    Tensor g("grad." + p.name, DType::F32, p.shape);
    std::memcpy(g.bytes.data(), grads[i].data(), g.bytes.size());
    out.push_back(std::move(g));
    out.push_back(Tensor::fromF32(p.name, p.shape, s.parameter(i)));
  }
  writeSafetensorsAtomic(args.get("out"), out);
  std::printf("K=%lld  %lld step(s)  loss %.6f -> %.6f\n", (long long)k,
              (long long)n, losses.front(), losses.back());
  return 0;
}

} // namespace fbt
