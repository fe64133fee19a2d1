//===- DataSplits.h - train / validation / test parts of a data set -*- C++ -*-===//
//
// Every data set fbt reads has three parts, cut at document starts so that
// no document is in two of them: training (what `fbt train` samples),
// validation (what it validates on, and what recipes are chosen on) and test
// (what results are reported on, once). The test part is the last
// documents, the validation part the documents before it; each holds about
// its fraction of the tokens: the cut falls at the first document start at
// or after the exact fraction's token. Data with too few documents for that
// (a text file read as one document) is cut at the exact tokens instead, and
// the split says so.
//
// The embedded corpus states its own parts (runtime/text/DefaultCorpus.h).
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TEXT_DATASPLITS_H
#define FBT_RUNTIME_TEXT_DATASPLITS_H

#include "runtime/text/TokenStream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fbt {

enum class DataPart { Train, Validation, Test };

/// "train", "validation", "test".
const char *partName(DataPart part);
/// The inverse of partName; throws naming the three for anything else.
DataPart parsePart(const std::string &name);

struct DataSplits {
  TokenStream train, validation, test;
  /// false: the data had too few documents and the parts were cut by tokens.
  bool byDocument = true;
  /// Documents that start in each part (train, validation, test).
  int64_t documents[3] = {0, 0, 0};

  const TokenStream &part(DataPart p) const;
  int64_t documentsIn(DataPart p) const { return documents[int(p)]; }
};

/// The positions of `separator` in `tokens`, in order: where documents start.
std::vector<int64_t> documentStarts(const TokenStream &tokens, int32_t separator);

/// The parts of `tokens` whose documents each begin with `separator`:
/// fractions in [0, 1) whose sum is below 1; a fraction of 0 is an empty
/// part. Throws naming the fraction that is out of range.
DataSplits splitData(const TokenStream &tokens, int32_t separator,
                     double validationFraction, double testFraction);

} // namespace fbt

#endif // FBT_RUNTIME_TEXT_DATASPLITS_H
