//===- DataSplits.cpp - train / validation / test parts of a data set -----===//

#include "runtime/text/DataSplits.h"

#include "runtime/base/Error.h"

#include <algorithm>
#include <cstdio>

namespace fbt {

const char *partName(DataPart part) {
  switch (part) {
  case DataPart::Train:
    return "train";
  case DataPart::Validation:
    return "validation";
  case DataPart::Test:
    return "test";
  }
  return "?";
}

DataPart parsePart(const std::string &name) {
  for (DataPart p : {DataPart::Train, DataPart::Validation, DataPart::Test})
    if (name == partName(p))
      return p;
  throw RuntimeError("unknown data part '" + name +
                     "' (expected train, validation or test)");
}

const TokenStream &DataSplits::part(DataPart p) const {
  switch (p) {
  case DataPart::Train:
    return train;
  case DataPart::Validation:
    return validation;
  case DataPart::Test:
    break;
  }
  return test;
}

std::vector<int64_t> documentStarts(const TokenStream &tokens, int32_t separator) {
  std::vector<int64_t> starts;
  for (int64_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] == separator)
      starts.push_back(i);
  return starts;
}

namespace {
void checkFraction(double f, const char *what) {
  if (!(f >= 0.0 && f < 1.0)) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", f);
    throw RuntimeError(std::string(what) + " must be in [0, 1), got " + got);
  }
}
} // namespace

DataSplits splitData(const TokenStream &tokens, int32_t separator,
                     double validationFraction, double testFraction) {
  checkFraction(validationFraction, "the validation fraction");
  checkFraction(testFraction, "the test fraction");
  if (validationFraction + testFraction >= 1.0)
    throw RuntimeError("the validation and test fractions leave no training part");
  const int64_t n = tokens.size();
  auto share = [&](double f) { return static_cast<int64_t>(static_cast<double>(n) * f); };
  std::vector<int64_t> starts = documentStarts(tokens, separator);
  // The first document start at or after `target` (n when there is none).
  auto cutAt = [&](int64_t target) {
    auto it = std::lower_bound(starts.begin(), starts.end(), target);
    return it == starts.end() ? n : *it;
  };

  DataSplits s;
  int64_t testCut = testFraction > 0 ? cutAt(n - share(testFraction)) : n;
  int64_t valCut =
      validationFraction > 0 ? cutAt(testCut - share(validationFraction)) : testCut;
  bool emptyPart = (testFraction > 0 && testCut == n) ||
                   (validationFraction > 0 && valCut == testCut) || valCut == 0;
  if (emptyPart) { // too few documents: cut at the exact tokens
    s.byDocument = false;
    testCut = n - share(testFraction);
    valCut = testCut - share(validationFraction);
  }
  s.train = tokens.slice(0, valCut);
  s.validation = tokens.slice(valCut, testCut - valCut);
  s.test = tokens.slice(testCut, n - testCut);
  for (int64_t at : starts)
    ++s.documents[at < valCut ? 0 : at < testCut ? 1 : 2];
  return s;
}

} // namespace fbt
