//===- HeldOutData.cpp - a run's data, cut into the parts it cut ----------===//

#include "runtime/train/HeldOutData.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/base/Json.h"
#include "runtime/text/DefaultCorpus.h"
#include "runtime/text/TokenFiles.h"
#include "runtime/train/RunDirectory.h"

#include <filesystem>

namespace fbt {

namespace {
/// The run's fraction `key` from run.json beside the checkpoint, if any.
std::optional<double> recordedFraction(const std::string &ckpt, const char *key) {
  if (ckpt.empty())
    return std::nullopt;
  std::string path = joinPath(directoryOf(ckpt), "run.json");
  if (!std::filesystem::exists(path))
    return std::nullopt;
  Json run = parseJson(readFile(path), path);
  const Json *v = jsonFind(run, key);
  if (!v || !v->is_number())
    return std::nullopt;
  return v->get<double>();
}

/// The data's parts as its run had them: the embedded corpus's own, or the
/// file cut at the run's fractions (or those given).
DataSplits dataSplits(const HeldOutOptions &o, const TokenStream &tokens,
                      const Session &session) {
  if (o.data.empty()) {
    if (o.valFraction || o.testFraction)
      throw RuntimeError("the embedded corpus has its own validation and test "
                         "parts: --val-fraction and --test-fraction apply to --data");
    return defaultCorpusSplits();
  }
  auto fraction = [&](const std::optional<double> &given, const char *key) {
    if (given)
      return *given;
    std::optional<double> recorded = recordedFraction(o.ckpt, key);
    // A run recorded before test parts existed held out validation only.
    if (!recorded && std::string(key) == "test_fraction" &&
        recordedFraction(o.ckpt, "val_fraction"))
      return 0.0;
    return recorded.value_or(0.1);
  };
  return splitData(tokens, int32_t(session.model().bosTokenId),
                   fraction(o.valFraction, "val_fraction"),
                   fraction(o.testFraction, "test_fraction"));
}

} // namespace

HeldOutData loadHeldOutData(Session &session, const HeldOutOptions &o) {
  HeldOutData d;
  const std::string &tokenizer = session.tokenizerName();
  if (o.data.empty() && tokenizer != "bytes")
    throw RuntimeError("the embedded corpus is byte-level text, but this run's "
                       "tokenizer is " + tokenizer + "; pass --data");
  d.tokens = o.data.empty() ? loadDefaultCorpus()
                            : loadTokenFile(o.data, session.model().vocabSize,
                                            TokenFileFormat::Auto, {}, &session.tokenizer());
  TokenFileFormat format = o.data.empty() ? TokenFileFormat::Text : tokenFileFormat(o.data);
  d.ids = format == TokenFileFormat::U16 || format == TokenFileFormat::U32;
  d.byteLevel = !d.ids && tokenizer == "bytes";
  d.splits = dataSplits(o, d.tokens, session);
  return d;
}

} // namespace fbt
