//===- fbt.cpp - the runtime CLI -----------------------------------------===//
//
//   fbt <command> [options]     (`fbt --help` lists the commands, from
//                                kCommands below; `fbt <command> --help`
//                                each one's options)
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

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {
#ifndef FBT_HAVE_HTTPLIB
int serveUnavailable(int, char **) {
  std::fputs("fbt: error: this fbt was built without cpp-httplib "
             "(libcpp-httplib-dev); rebuild with it to serve\n", stderr);
  return 2;
}
#endif

/// The commands, in the order `fbt --help` lists them: the one table.
struct Command {
  const char *name, *usage, *summary;
  int (*run)(int argc, char **argv);
};
const Command kCommands[] = {
    {"train", "BUNDLE", "train the model (default data: an embedded corpus)", fbt::runTrain},
    {"generate", "BUNDLE", "generate text: standard, soft or fused decoding", fbt::runGenerate},
    {"eval", "BUNDLE", "held-out losses per pass and regime, tasks, contraction",
     fbt::runEval},
    {"score", "BUNDLE", "teacher-forced logits in a decoding regime (checks)", fbt::runScore},
    {"states", "BUNDLE",
     "every layer's residual stream under plain and fused prefill (checks, probes; "
     "fbtc --with-states)",
     fbt::runStates},
    {"probe", "BUNDLE",
     "linear probes of every layer under standard and fused prefill (fbtc --with-states)",
     fbt::runProbe},
    {"step", "BUNDLE", "run training steps on tensors from safetensors files", fbt::runStep},
    {"inspect", "BUNDLE", "show the model, steps, kernels and arena sizes", fbt::runInspect},
    {"bench", "BUNDLE", "time the compiled training or decoding steps", fbt::runBench},
    {"tune", "BUNDLE",
     "choose the fastest kernel variants for this device (bundles compiled with "
     "fbtc --tune-space)",
     fbt::runTune},
    {"export", "BUNDLE",
     "the standard model of a checkpoint as a llama.cpp GGUF (--gguf OUT.gguf) or a "
     "Hugging Face Llama folder (--hf DIR)",
     fbt::runExport},
    {"quantize", "BUNDLE",
     "a checkpoint's weights in the bundle's inference form (int8 or bf16), one file "
     "(-o OUT.safetensors)",
     fbt::runQuantize},
    {"import", "HF_DIR",
     "a Hugging Face Llama folder as a spec and a checkpoint (-o SPEC.json CKPT)",
     fbt::runImport},
    {"devices", "", "list the GPUs this fbt can use", fbt::runDevices},
    {"tokenize", "FILE..",
     "text (or JSONL) to a token file: bytes, GPT-2 BPE, SentencePiece", fbt::runTokenize},
#ifdef FBT_HAVE_HTTPLIB
    {"serve", "BUNDLE",
     "an OpenAI-compatible HTTP server (completions, chat, streaming, every regime)",
     fbt::runServe},
#else
    {"serve", "BUNDLE", "an OpenAI-compatible HTTP server (not in this build)",
     serveUnavailable},
#endif
};

/// "  name ARGS  summary", the summary wrapped at 78 columns under itself.
void usage(std::FILE *out) {
  std::fputs("usage: fbt <command> [options]\n"
             "\n"
             "Runs bundles compiled by fbtc (fbtc SPEC --target=cpu -o M.fbtb), on\n"
             "the CPU or, for --target=sm_XY bundles, on an NVIDIA GPU.\n"
             "\n"
             "commands:\n",
             out);
  for (const Command &c : kCommands) {
    std::string head = std::string("  ") + c.name + " " + c.usage;
    head.resize(19, ' ');
    std::string line = head, word, summary = c.summary;
    for (size_t at = 0; at <= summary.size(); ++at) {
      if (at < summary.size() && summary[at] != ' ') {
        word += summary[at];
        continue;
      }
      if (line.size() + word.size() + 1 > 78 && line.size() > head.size()) {
        std::fprintf(out, "%s\n", line.c_str());
        line = std::string(head.size(), ' ');
      }
      line += (line.back() == ' ' ? "" : " ") + word;
      word.clear();
    }
    std::fprintf(out, "%s\n", line.c_str());
  }
  std::fputs("\n"
             "`fbt <command> --help` describes each command's options; every\n"
             "command takes --threads N (before or after it), the CPU steps'\n"
             "threads (default: OMP_NUM_THREADS, else every core). Commands that\n"
             "run steps use the choices `fbt tune` stored for the device\n"
             "(--tune-cache FILE, --no-tune).\n",
             out);
}
} // namespace

/// `fbt --threads N COMMAND ...` (and --threads=N) is `fbt COMMAND
/// --threads N ...`: the option moves behind the command, which parses it.
std::vector<char *> threadsAfterCommand(int argc, char **argv) {
  std::vector<char *> args(argv, argv + argc);
  if (args.size() < 2)
    return args;
  std::string first = args[1];
  size_t option = first == "--threads" ? 2 : first.rfind("--threads=", 0) == 0 ? 1 : 0;
  if (option && args.size() > 1 + option)
    std::rotate(args.begin() + 1, args.begin() + 1 + option, args.begin() + 2 + option);
  return args;
}

int main(int argc, char **argv) {
  std::vector<char *> args = threadsAfterCommand(argc, argv);
  argc = (int)args.size();
  argv = args.data();
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
    for (const Command &c : kCommands)
      if (cmd == c.name)
        return c.run(argc, argv);
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
