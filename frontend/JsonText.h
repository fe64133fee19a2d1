//===- JsonText.h - JSON text helpers for spec errors -----------*- C++ -*-===//
//
// What the spec reader needs beyond llvm::json: a scan of the raw text for
// nesting depth and duplicate keys (llvm::json silently keeps the last of
// two), integral reading of numbers, and how values and keys are shown in
// one-line error messages.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_FRONTEND_JSONTEXT_H
#define FBT_FRONTEND_JSONTEXT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace fbt {

/// A spec nests two objects deep; anything much deeper is not a spec, and
/// the limit keeps llvm::json's recursive parser and destructor off deep
/// stacks (a fuzzer finds "[[[[..." quickly).
constexpr unsigned kMaxNesting = 32;

/// Shortest decimal that reads back as `d`, so errors echo what the user
/// wrote ("0.1", not "0.10000000000000001").
std::string formatDouble(double d);

/// The value if `v` is a number with an integral value that fits in int64
/// (64, 64.0 and 6.4e1 all do; 2.5 and 2^63 do not).
std::optional<int64_t> asInt64(const llvm::json::Value &v);

/// The value if `v` is a number with an integral value that fits in uint64.
std::optional<uint64_t> asUInt64(const llvm::json::Value &v);

/// How an error message shows the value it got: scalars as JSON (strings
/// quoted and shortened), containers by kind only ("an array").
std::string describeValue(const llvm::json::Value &v);

/// A key as a path component: bare if it looks like one, else quoted, so a
/// key holding a newline or a dot cannot break or fake the message.
std::string displayKey(llvm::StringRef key);

/// 1-based line and column of byte `offset` in `text`.
std::pair<size_t, size_t> lineColumn(llvm::StringRef text, size_t offset);

/// What a pass over the raw text finds that llvm::json does not report.
struct TextScan {
  /// Offset of the bracket that nests deeper than kMaxNesting.
  std::optional<size_t> tooDeepAt;
  /// First repeated key: its path and the byte offsets of both occurrences.
  std::optional<std::string> duplicatePath;
  size_t firstOffset = 0, duplicateOffset = 0;
};

/// Scans JSON text for nesting depth and duplicate keys. On invalid JSON the
/// depth is still an upper bound of the parser's recursion (both agree on
/// where strings are up to the first syntax error); use the duplicate only
/// once the text has parsed.
TextScan scanText(llvm::StringRef text);

} // namespace fbt

#endif // FBT_FRONTEND_JSONTEXT_H
