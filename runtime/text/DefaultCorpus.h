//===- DefaultCorpus.h - The built-in training text -------------*- C++ -*-===//
//
// A few hundred KB of simple English generated from templates, so that
// `fbt train` works out of the box with no download and no data file: short
// stories, word problems whose numbers add up, arithmetic facts ("12+7=19"),
// counting and everyday facts. It is regular enough that a tiny byte-level
// model's loss falls visibly within a few hundred steps, and the arithmetic
// gives the feedback path something to carry from one position to the next.
//
// The text is written by code, deterministically (integer arithmetic on the
// counter-based generator only), so every build on every machine holds the
// same bytes. It is ASCII with no NUL bytes; documents are separated by a
// blank line. It has its own three parts, whole documents each: the first
// 230 KiB train, then about 448 KiB each of validation and test documents.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TEXT_DEFAULTCORPUS_H
#define FBT_RUNTIME_TEXT_DEFAULTCORPUS_H

#include "runtime/text/DataSplits.h"
#include "runtime/text/TokenStream.h"

#include <cstddef>

namespace fbt {

/// Separates the corpus's documents.
constexpr const char *kDefaultCorpusSeparator = "\n\n";

/// The corpus, NUL-terminated; built on first use, then shared.
const char *defaultCorpus();
/// Its length in bytes.
size_t defaultCorpusSize();

/// The corpus, tokenized byte-level (documents split on blank lines).
TokenStream loadDefaultCorpus();
/// Its train, validation and test parts, tokenized the same way.
DataSplits defaultCorpusSplits();

} // namespace fbt

#endif // FBT_RUNTIME_TEXT_DEFAULTCORPUS_H
