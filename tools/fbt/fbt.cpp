//===- fbt.cpp - the runtime CLI -----------------------------------------===//
//
//   fbt train BUNDLE [options]      train on text or token files
//   fbt step BUNDLE --params P --batch B --passes K --out O
//                                   run training steps on given tensors
//   fbt generate BUNDLE --ckpt C --prompt TEXT [--mode soft]
//                                   generate text in a decoding regime
//   fbt eval BUNDLE --ckpt C        held-out losses per pass and regime,
//                                   task accuracy, contraction
//   fbt score BUNDLE ...            teacher-forced logits (numerics checks)
//   fbt inspect BUNDLE              what a bundle holds
//   fbt tune BUNDLE                 choose kernel variants for this device
//   fbt devices                     the GPUs this fbt can use
//   fbt tokenize FILE... -o OUT.bin text to a token file
//   fbt serve BUNDLE --ckpt C       an OpenAI-compatible HTTP server
//
// A bundle runs where its target says: "cpu" bundles on the host, "nvptx"
// bundles on an NVIDIA GPU; every command works the same for both.
//
// Errors are one line on stderr; the exit status is 2 for bad input (files,
// options) and 1 for failures while running.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "runtime/base/Error.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

static void usage(std::FILE *out) {
  std::fputs(
      "usage: fbt <command> [options]\n"
      "\n"
      "Runs bundles compiled by fbtc (fbtc SPEC --target=cpu -o M.fbtb), on\n"
      "the CPU or, for --target=sm_XY bundles, on an NVIDIA GPU.\n"
      "\n"
      "commands:\n"
      "  train BUNDLE     train the model (default data: an embedded corpus)\n"
      "  generate BUNDLE  generate text: standard, soft or fused decoding\n"
      "  eval BUNDLE      held-out losses per pass and regime, tasks, contraction\n"
      "  score BUNDLE     teacher-forced logits in a decoding regime (checks)\n"
      "  step BUNDLE      run training steps on tensors from safetensors files\n"
      "  inspect BUNDLE   show the model, steps, kernels and arena sizes\n"
      "  bench BUNDLE     time the compiled training or decoding steps\n"
      "  tune BUNDLE      choose the fastest kernel variants for this device\n"
      "                   (bundles compiled with fbtc --tune-space)\n"
      "  devices          list the GPUs this fbt can use\n"
      "  tokenize FILE..  text (or JSONL) to a token file: bytes, GPT-2 BPE,\n"
      "                   SentencePiece\n"
      "  serve BUNDLE     an OpenAI-compatible HTTP server (completions, chat,\n"
      "                   streaming, every regime)\n"
      "\n"
      "`fbt <command> --help` describes each command's options; every\n"
      "command takes --threads N, the CPU steps' threads (default:\n"
      "OMP_NUM_THREADS, else every core). Commands that run steps use the\n"
      "choices `fbt tune` stored for the device (--tune-cache FILE, --no-tune).\n",
      out);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    usage(stdout);
    return 0;
  }
  try {
    if (cmd == "train")
      return fbt::runTrain(argc, argv);
    if (cmd == "generate")
      return fbt::runGenerate(argc, argv);
    if (cmd == "bench")
      return fbt::runBench(argc, argv);
    if (cmd == "tune")
      return fbt::runTune(argc, argv);
    if (cmd == "score")
      return fbt::runScore(argc, argv);
    if (cmd == "eval")
      return fbt::runEval(argc, argv);
    if (cmd == "step")
      return fbt::runStep(argc, argv);
    if (cmd == "inspect")
      return fbt::runInspect(argc, argv);
    if (cmd == "devices")
      return fbt::runDevices(argc, argv);
    if (cmd == "tokenize")
      return fbt::runTokenize(argc, argv);
    if (cmd == "serve") {
#ifdef FBT_HAVE_HTTPLIB
      return fbt::runServe(argc, argv);
#else
      std::fputs("fbt: error: this fbt was built without cpp-httplib "
                 "(libcpp-httplib-dev); rebuild with it to serve\n", stderr);
      return 2;
#endif
    }
    std::fprintf(stderr, "fbt: error: unknown command '%s'\n", cmd.c_str());
    usage(stderr);
    return 2;
  } catch (const fbt::RuntimeError &e) {
    std::fprintf(stderr, "fbt: error: %s\n", e.what());
    return 2;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "fbt: error: %s\n", e.what());
    return 1;
  }
}
