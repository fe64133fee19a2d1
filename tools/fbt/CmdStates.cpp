//===- CmdStates.cpp - fbt states: every layer's residual stream ----------===//
//
//   fbt states BUNDLE --ckpt C --tokens T.safetensors --passes N --out S.safetensors
//
// For checks and probes: each prompt's residual stream at every layer (the
// input of each block, then the top-layer state) under plain prefill and
// each fused pass up to N, from a bundle compiled with fbtc --with-states.
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"
#include "PromptTokens.h"

#include "runtime/base/Error.h"
#include "runtime/decode/Decoder.h"
#include "runtime/format/Safetensors.h"

#include <algorithm>

namespace fbt {

int runStates(int argc, char **argv) {
  CommandLine args("fbt states",
                   "Every layer's residual stream over prompts, for checks and probes:\n"
                   "`tokens` holds input_ids I32 [N, T] and prompt_lengths I32 [N]; the\n"
                   "output holds pass<P>.residual.<l> F32 [N, T, D] for P = 1..--passes\n"
                   "(plain prefill, then the fused passes) and l = 0..L (block l's\n"
                   "input; L: the top-layer state), zeros past each prompt.\n"
                   "Needs a bundle compiled with fbtc --with-states.");
  args.positional("BUNDLE", "the compiled bundle")
      .text("ckpt", "CKPT", "a checkpoint from fbt train (required)")
      .text("tokens", "T.safetensors", "input_ids and prompt_lengths (required)")
      .integer("passes", "N", "plain prefill and N - 1 fused passes (default 1)")
      .text("out", "STATES.safetensors", "where the states go (required)");
  if (!args.parse(argc, argv))
    return 0;
  if (!args.has("ckpt") || !args.has("tokens") || !args.has("out"))
    throw RuntimeError("--ckpt, --tokens and --out are required (see --help)");
  int64_t passes = args.getInt("passes", 1);
  if (passes < 1)
    throw RuntimeError("--passes must be >= 1");
  Session session(args.require("BUNDLE"));
  session.loadCheckpoint(args.get("ckpt"));
  Decoder decoder(session);
  PromptTokens tokens = readPromptTokens(args.get("tokens"), decoder.vocab());
  int64_t n = (int64_t)tokens.rows.size(), t = tokens.width, d = decoder.width();
  int64_t layers = session.model().numHiddenLayers;
  // [pass][layer] -> [N, T, D]
  std::vector<std::vector<std::vector<float>>> all(
      passes, std::vector<std::vector<float>>(layers + 1, std::vector<float>(n * t * d, 0)));
  for (int64_t first = 0; first < n; first += decoder.batchSize()) {
    int64_t count = std::min(decoder.batchSize(), n - first);
    std::vector<std::vector<int32_t>> prompts;
    for (int64_t r = first; r < first + count; ++r)
      prompts.emplace_back(tokens.rows[r].begin(), tokens.rows[r].begin() + tokens.lengths[r]);
    auto states = decoder.layerStates(prompts, passes);
    for (int64_t p = 0; p < passes; ++p)
      for (int64_t l = 0; l <= layers; ++l)
        for (int64_t b = 0; b < count; ++b)
          std::copy(states[p][l][b].begin(), states[p][l][b].end(),
                    all[p][l].begin() + (first + b) * t * d);
  }
  std::vector<Tensor> out;
  for (int64_t p = 0; p < passes; ++p)
    for (int64_t l = 0; l <= layers; ++l)
      out.push_back(Tensor::fromF32("pass" + std::to_string(p + 1) + ".residual." +
                                        std::to_string(l),
                                    {n, t, d}, all[p][l]));
  writeSafetensorsAtomic(args.get("out"), out);
  return 0;
}

} // namespace fbt
