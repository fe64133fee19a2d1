//===- TokenStream.h - Token data for training -------------------------*- C++ -*-===//
//
// Where training tokens come from and how batches are cut from them:
//  - Raw UTF-8 text through the byte-level tokenizer: each byte is its own
//    token id (0..255, vocab 256). Every document is preceded by the BOS id
//    0: id 0 is the NUL byte, which text never contains (a NUL in the input
//    is an error), so BOS cannot be confused with a character. By default a
//    whole file is one document; a separator (e.g. "\n\n") splits it.
//  - Pre-tokenized .bin files: llm.c's (a 1 KiB header naming the id width
//    and count, as `fbt tokenize` writes), or nanoGPT's raw little-endian
//    uint16 ids, uint32 when the name ends in ".u32.bin" (or when asked). They
//    are memory-mapped, not copied, and every id is checked against the
//    vocab size up front, so a bad file fails at load with its offset rather
//    than as an out-of-bounds embedding lookup mid-run.
// A TokenStream is a cheap view: the train/val split slices one stream
// without copying.
//
// Batches are pure functions of (seed, step): window offsets come from the
// counter-based generator in Random.h, so resuming at step s reproduces the
// exact batches of the uninterrupted run.
//
// Errors throw fbt::RuntimeError naming the file and the offset.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TEXT_TOKENSTREAM_H
#define FBT_RUNTIME_TEXT_TOKENSTREAM_H

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fbt {

/// The byte-level tokenizer's document separator id, and its vocab size.
constexpr int32_t kByteBosToken = 0;
constexpr int64_t kByteVocabSize = 256;

/// A read-only sequence of token ids, held in memory or memory-mapped from a
/// .bin file. Copies and slices share the storage.
class TokenStream {
public:
  TokenStream() = default;
  /// Owns `tokens`; `source` names the stream in errors.
  explicit TokenStream(std::vector<int32_t> tokens,
                       std::string source = "<memory>");
  /// Instruction data: `trained[i]` says whether token i is a target the
  /// loss counts (an assistant's answer) or not (the prompt, the user's
  /// turns); `starts` are the token indices where conversations begin, in
  /// order, where training windows start (sampleBatch).
  TokenStream(std::vector<int32_t> tokens, std::vector<uint8_t> trained,
              std::vector<int64_t> starts, std::string source);

  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// Token i, unchecked (0 <= i < size()).
  int32_t operator[](int64_t i) const;
  /// Tokens [begin, begin + count) into out; throws when out of range.
  void copy(int64_t begin, int64_t count, int32_t *out) const;
  /// The view [begin, begin + count); throws when out of range.
  TokenStream slice(int64_t begin, int64_t count) const;
  std::vector<int32_t> toVector() const;
  /// File name (or "<memory>") for messages.
  const std::string &source() const { return source_; }

  /// Whether some tokens are not trained on (instruction data).
  bool masked() const;
  /// Whether token i (0 <= i < size()) is a target the loss counts: every
  /// token of a stream that is not masked().
  bool trained(int64_t i) const;
  /// How many of tokens 1..size()-1 (the stream's targets) are trained on.
  int64_t trainedTargets() const;
  /// Of a masked() stream: how many conversations start at an index
  /// <= `last`, and the index of the j-th of them.
  int64_t startsThrough(int64_t last) const;
  int64_t start(int64_t j) const;

private:
  friend TokenStream loadBinFile(const std::string &, int64_t, int);
  struct Storage;
  std::shared_ptr<const Storage> storage_;
  const uint8_t *base_ = nullptr; // first token of this view
  int64_t first_ = 0;             // its index in the storage
  int64_t size_ = 0;
  int width_ = 4; // bytes per token: 2 or 4
  std::string source_;
};

//===----------------------------------------------------------------------===//
// Byte-level text
//===----------------------------------------------------------------------===//

/// BOS, the bytes of document 1, BOS, document 2, ... Documents are split on
/// `docSeparator` (the whole text is one document when it is empty); the
/// separator itself is dropped, and so are empty documents. A NUL byte is an
/// error naming `sourceName` and its byte offset.
std::vector<int32_t> tokenizeText(std::string_view text,
                                  std::string_view docSeparator = {},
                                  const std::string &sourceName = "<text>");

/// The bytes of ids (byteTokenizer().decode): BOS ids are dropped; throws
/// for an id outside 0..255.
std::string detokenize(const std::vector<int32_t> &ids);

/// A UTF-8 text file through tokenizeText.
TokenStream loadTextFile(const std::string &path,
                         std::string_view docSeparator = {});

//===----------------------------------------------------------------------===//
// Pre-tokenized .bin files
//===----------------------------------------------------------------------===//

/// Memory-maps a file of little-endian uint16 (tokenBytes = 2) or uint32
/// (tokenBytes = 4) ids and checks each id < vocabSize. Errors like
/// "train.bin: token 50304 at offset 1234 (byte 2468) is not below the
/// vocab size 50257".
TokenStream loadBinFile(const std::string &path, int64_t vocabSize,
                        int tokenBytes);

/// llm.c's .bin header: 256 int32, the first a magic number naming the id
/// width, the third the token count. Files without it are raw ids.
constexpr int32_t kBinMagicU16 = 20240520, kBinMagicU32 = 20240801;
constexpr size_t kBinHeaderBytes = 1024;

/// Writes `ids` with llm.c's header: uint16 ids when vocabSize <= 65536,
/// else uint32. Atomic (runtime/base/FileIO.h).
void writeBinFile(const std::string &path, const std::vector<int32_t> &ids,
                  int64_t vocabSize);

class Tokenizer;

/// Each document of `text` through `tokenizer`, preceded by its separator:
/// documents split on `docSeparator` (the whole text when it is empty),
/// the separator itself dropped, and empty documents too. Errors name
/// `sourceName`.
std::vector<int32_t> tokenizeDocuments(std::string_view text, std::string_view docSeparator,
                                       const Tokenizer &tokenizer,
                                       const std::string &sourceName);


/// Throws unless every id of `tokens` is in [0, vocabSize).
void checkVocab(const TokenStream &tokens, int64_t vocabSize);

//===----------------------------------------------------------------------===//
// Splits and batches
//===----------------------------------------------------------------------===//

/// Input ids and next-token targets, each [batchSize, seqLen] row-major.
struct Batch {
  int64_t batchSize = 0;
  int64_t seqLen = 0;
  std::vector<int32_t> inputs;
  /// targets[b, t] = inputs[b, t + 1] in-stream, or kIgnoredTarget
  /// (base/IgnoredTarget.h) where the stream does not train on that token.
  std::vector<int32_t> targets;
};

/// Micro-batch `micro` of the `microBatches` that make up the global batch
/// of `step`: row b is the window of seqLen + 1 tokens at offset
/// uniformInt(seed, streams::kBatch, (step * microBatches + micro) *
/// batchSize + b, n - seqLen), split into inputs and targets. A pure
/// function of its arguments, whichever rank draws it, so a run's data does
/// not depend on how many ranks share the global batch. Needs n >= seqLen + 1.
/// Of a masked() stream (instruction data), windows start where
/// conversations do: the offset is the start(uniformInt(..., S)) of the S
/// conversations starting at or before n - seqLen - 1, so every window
/// opens with a whole conversation, and the ones packed after it run to the
/// window's end.
Batch sampleBatch(const TokenStream &tokens, int64_t batchSize, int64_t seqLen,
                  uint64_t seed, int64_t step, int64_t micro = 0,
                  int64_t microBatches = 1);

/// Held-out batches over fixed, non-overlapping windows spread over the
/// whole stream: of its W = (n - 1) / seqLen windows (window j starts at
/// j * seqLen), `maxWindows` (0: all W) are taken at an even stride, window
/// i of the count being floor(i * W / count), and batch b holds the taken
/// windows b*B .. b*B + B - 1. The count is rounded up to whole batches (at
/// most the whole batches W holds), so
/// every batch has the compiled shape and every evaluation sees the same
/// tokens, from the part's first bytes to its last.
class ValBatches {
public:
  /// Throws when the stream holds fewer than batchSize windows.
  ValBatches(TokenStream tokens, int64_t batchSize, int64_t seqLen,
             int64_t maxWindows = 0);

  int64_t size() const { return numBatches_; }
  /// Windows taken (size() * batchSize), and the W the stream holds.
  int64_t windows() const { return numBatches_ * batchSize_; }
  int64_t windowsInStream() const { return streamWindows_; }
  /// The token offset of taken window `i` in the stream.
  int64_t offset(int64_t i) const;
  Batch operator[](int64_t index) const;
  const TokenStream &tokens() const { return tokens_; }

private:
  TokenStream tokens_;
  int64_t batchSize_, seqLen_, numBatches_, streamWindows_;
};

} // namespace fbt

#endif // FBT_RUNTIME_TEXT_TOKENSTREAM_H
