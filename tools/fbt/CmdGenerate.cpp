//===- CmdGenerate.cpp - fbt generate and fbt score -----------------------===//

#include "CommandLine.h"
#include "Commands.h"
#include "PromptTokens.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/decode/Decoder.h"
#include "runtime/format/Safetensors.h"
#include "runtime/text/GrowingText.h"
#include "runtime/text/TokenStream.h"
#include "runtime/text/Tokenizer.h"

#include <cstdio>
#include <fstream>

namespace fbt {

namespace {
std::vector<std::string> readPrompts(const CommandLine &args) {
  if (args.has("prompt") == args.has("prompts"))
    throw RuntimeError("give exactly one of --prompt TEXT or --prompts FILE");
  if (args.has("prompt"))
    return {args.get("prompt")};
  std::vector<std::string> prompts;
  std::ifstream in(args.get("prompts"));
  if (!in)
    throw RuntimeError(systemErrorMessage("cannot open '" + args.get("prompts") + "'"));
  for (std::string line; std::getline(in, line);)
    if (!line.empty())
      prompts.push_back(line);
  if (prompts.empty())
    throw RuntimeError(args.get("prompts") + ": no prompts (one per line)");
  return prompts;
}

/// --temperature, --top-k, --top-p, --seed, checked.
SamplingOptions samplingOptions(const CommandLine &args) {
  SamplingOptions sampling;
  sampling.temperature = args.getDouble("temperature", 0);
  sampling.topK = args.getInt("top-k", 0);
  sampling.topP = args.getDouble("top-p", 1.0);
  sampling.seed = (uint64_t)args.getInt("seed", 0);
  checkSampling(sampling);
  return sampling;
}

} // namespace

int runGenerate(int argc, char **argv) {
  CommandLine args("fbt generate", "Generates text after each prompt (one prompt per line in FILE, decoded\n"
                                   "together in batches of the bundle's inference batch), through the\n"
                                   "tokenizer the checkpoint's run used (or --tokenizer T).");
  args.positional("BUNDLE", "the compiled bundle (fbtc SPEC --target=... -o M.fbtb)")
      .tunable()
      .text("ckpt", "CKPT", "a checkpoint from fbt train (required)")
      .text("prompt", "TEXT", "one prompt")
      .text("prompts", "FILE", "prompts, one per line")
      .text("mode", "MODE",
            "standard: plain inputs; soft: every generated token fuses the "
            "previous top-layer state (default; standard for a model without "
            "feedback); fused:N: N prefill passes, then soft")
      .integer("max-new-tokens", "N", "tokens to generate per prompt (default 64)")
      .number("temperature", "T", "0 for greedy (default 0)")
      .integer("top-k", "K", "sample among the K likeliest (default 0: all)")
      .number("top-p", "P", "sample within top-p probability mass (default 1)")
      .integer("seed", "S", "sampling seed (default 0)")
      .text("stop", "STRING", "stop a sequence once its text ends with STRING")
      .text("tokenizer", "T", "the tokenizer to use instead of the run's")
      .flag("quiet", "no progress output");
  if (!args.parse(argc, argv))
    return 0;
  std::unique_ptr<Session> opened = openTrained(args);
  Session &session = *opened;
  const Tokenizer &tok = session.tokenizer();
  Decoder decoder(session);
  Regime regime = args.has("mode") ? Regime::parse(args.get("mode")) : decoder.defaultRegime();
  decoder.checkRegime(regime);
  SamplingOptions sampling = samplingOptions(args);
  int64_t maxNew = args.getInt("max-new-tokens", 64);
  if (maxNew < 1)
    throw RuntimeError("--max-new-tokens must be >= 1");
  std::string stop = args.get("stop");
  int32_t separator = tok.documentSeparator();

  std::vector<std::string> prompts = readPrompts(args);
  bool stream = prompts.size() == 1;
  auto print = [&](const std::string &text) {
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
  };
  for (size_t first = 0; first < prompts.size(); first += decoder.batchSize()) {
    size_t count = std::min<size_t>(decoder.batchSize(), prompts.size() - first);
    std::vector<std::vector<int32_t>> ids;
    std::vector<GrowingText> texts(count);
    for (size_t i = 0; i < count; ++i)
      ids.push_back(encodeDocument(tok, prompts[first + i]));
    if (stream)
      print(prompts[0]);
    decoder.generate(ids, regime, sampling, maxNew, [&](int64_t row, int32_t id) {
      std::string piece = texts[row].add(tok, id);
      if (stream)
        print(piece);
      return id != separator && !texts[row].endsWith(stop);
    });
    if (stream) {
      print("\n");
      continue;
    }
    for (size_t i = 0; i < count; ++i)
      std::printf("[%zu] %s%s\n", first + i, prompts[first + i].c_str(), texts[i].text.c_str());
  }
  return 0;
}

int runScore(int argc, char **argv) {
  CommandLine args("fbt score",
                   "Teacher-forced decoding for checks: `tokens` holds input_ids I32 [N, T]\n"
                   "and prompt_lengths I32 [N]; each row is prefilled with its prompt and\n"
                   "fed the rest one token at a time. `logits` F32 [N, T, V] predicts\n"
                   "each position from prompt_length-1 on (zeros before).");
  args.positional("BUNDLE", "the compiled bundle")
      .text("ckpt", "CKPT", "a checkpoint from fbt train (required)")
      .text("tokens", "T.safetensors", "input_ids and prompt_lengths (required)")
      .text("mode", "MODE", "standard (default), soft or fused:N")
      .text("out", "LOGITS.safetensors", "where the logits go (required)");
  if (!args.parse(argc, argv))
    return 0;
  if (!args.has("ckpt") || !args.has("tokens") || !args.has("out"))
    throw RuntimeError("--ckpt, --tokens and --out are required (see --help)");
  Session session(args.require("BUNDLE"));
  session.loadCheckpoint(args.get("ckpt"));
  Decoder decoder(session);
  Regime regime = Regime::parse(args.get("mode", "standard"));
  PromptTokens tokens = readPromptTokens(args.get("tokens"), decoder.vocab());
  int64_t n = (int64_t)tokens.rows.size(), t = tokens.width;
  std::vector<float> all;
  for (int64_t first = 0; first < n; first += decoder.batchSize()) {
    int64_t count = std::min(decoder.batchSize(), n - first);
    std::vector<std::vector<int32_t>> seqs(tokens.rows.begin() + first,
                                           tokens.rows.begin() + first + count);
    std::vector<int64_t> prompt(tokens.lengths.begin() + first,
                                tokens.lengths.begin() + first + count);
    auto logits = decoder.score(seqs, prompt, regime);
    for (auto &seq : logits)
      for (auto &pos : seq)
        all.insert(all.end(), pos.begin(), pos.end());
  }
  writeSafetensorsAtomic(args.get("out"),
                         {Tensor::fromF32("logits", {n, t, decoder.vocab()}, all)});
  return 0;
}

} // namespace fbt
