//===- EvalData.cpp - the held-out data fbt eval and fbt probe read -------===//

#include "EvalData.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/base/Json.h"
#include "runtime/text/DefaultCorpus.h"
#include "runtime/train/RunDirectory.h"

#include <filesystem>
#include <optional>

namespace fbt {

namespace {
/// The run's fraction `key` from run.json beside the checkpoint, if any.
std::optional<double> recordedFraction(const std::string &ckpt, const char *key) {
  std::string path = joinPath(directoryOf(ckpt), "run.json");
  if (!std::filesystem::exists(path))
    return std::nullopt;
  Json run = parseJson(readFile(path), path);
  const Json *v = jsonFind(run, key);
  if (!v || !v->is_number())
    return std::nullopt;
  return v->get<double>();
}

/// The data's parts as its run had them: the embedded corpus's own, or
/// --data cut at the run's fractions (or those given).
DataSplits dataSplits(const CommandLine &args, const TokenStream &tokens,
                      const Session &session) {
  if (!args.has("data")) {
    if (args.has("val-fraction") || args.has("test-fraction"))
      throw RuntimeError("the embedded corpus has its own validation and test "
                         "parts: --val-fraction and --test-fraction apply to --data");
    return defaultCorpusSplits();
  }
  auto fraction = [&](const char *option, const char *key) {
    if (args.has(option))
      return args.getDouble(option, 0.1);
    std::optional<double> recorded = recordedFraction(args.get("ckpt"), key);
    // A run recorded before test parts existed held out validation only.
    if (!recorded && std::string(key) == "test_fraction" &&
        recordedFraction(args.get("ckpt"), "val_fraction"))
      return 0.0;
    return recorded.value_or(0.1);
  };
  return splitData(tokens, int32_t(session.model().bosTokenId),
                   fraction("val-fraction", "val_fraction"),
                   fraction("test-fraction", "test_fraction"));
}

} // namespace

EvalData loadEvalData(const CommandLine &args, Session &session) {
  EvalData d;
  std::string dataPath = args.get("data");
  const std::string &tokenizer = session.tokenizerName();
  if (dataPath.empty() && tokenizer != "bytes")
    throw RuntimeError("the embedded corpus is byte-level text, but this run's "
                       "tokenizer is " + tokenizer + "; pass --data");
  d.tokens = dataPath.empty() ? loadDefaultCorpus()
                              : loadTokenFile(dataPath, session.model().vocabSize,
                                              TokenFileFormat::Auto, {}, &session.tokenizer());
  TokenFileFormat format = dataPath.empty() ? TokenFileFormat::Text : tokenFileFormat(dataPath);
  d.ids = format == TokenFileFormat::U16 || format == TokenFileFormat::U32;
  d.byteLevel = !d.ids && tokenizer == "bytes";
  d.splits = dataSplits(args, d.tokens, session);
  return d;
}


} // namespace fbt
