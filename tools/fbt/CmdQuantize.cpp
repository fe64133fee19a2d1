//===- CmdQuantize.cpp - fbt quantize: a checkpoint in its inference form --===//
//
//   fbt quantize BUNDLE --ckpt CKPT -o OUT.safetensors
//
// Stores a checkpoint's weights as BUNDLE's inference steps read them (a
// bundle compiled with fbtc --inference-weights=int8 or bf16): one file,
// written atomically, a quarter (int8) or half (bf16) the bytes of the
// model's f32 matrices and without the optimizer's moments, which generate,
// eval, score and serve load with --ckpt in place of the checkpoint
// (runtime/format/InferenceFile.h).
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"

#include "runtime/base/Error.h"
#include "runtime/format/WeightNames.h"
#include "runtime/session/Session.h"

#include <cstdio>
#include <filesystem>

namespace fbt {

int runQuantize(int argc, char **argv) {
  CommandLine args("fbt quantize",
                   "Stores a checkpoint's weights in the bundle's inference form (fbtc\n"
                   "--inference-weights int8: int8 with an f16 scale per group of 32 along\n"
                   "each row; bf16): each weight matrix the inference steps multiply by,\n"
                   "narrow, the rest f32, no optimizer state. fbt generate, eval, score and\n"
                   "serve take the file as --ckpt, with the same bundle.");
  args.positional("BUNDLE", "a bundle compiled with --inference-weights int8 or bf16")
      .text("ckpt", "CKPT", "a checkpoint from fbt train (required)")
      .text("o,out", "OUT.safetensors", "the file to write, replaced atomically (required)");
  if (!args.parse(argc, argv))
    return 0;
  if (!args.has("ckpt") || !args.has("out"))
    throw RuntimeError("--ckpt and -o are required (see --help)");
  Session session(args.require("BUNDLE"));
  session.loadCheckpoint(args.get("ckpt"));
  session.saveInferenceWeights(args.get("out"));
  std::printf("wrote %s: %s weights of '%s', %.1f MiB (the checkpoint: %.1f MiB)\n",
              args.get("out").c_str(), kindName(session.model().inference.weights),
              session.model().name.c_str(),
              double(std::filesystem::file_size(args.get("out"))) / (1 << 20),
              double(std::filesystem::file_size(args.get("ckpt"))) / (1 << 20));
  return 0;
}

} // namespace fbt
