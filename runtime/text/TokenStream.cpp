//===- TokenStream.cpp - Token data for training ---------------------------------===//

#include "runtime/text/TokenStream.h"

#include "runtime/base/Error.h"
#include "runtime/base/IgnoredTarget.h"
#include "runtime/base/FileIO.h"
#include "runtime/base/Json.h"
#include "runtime/base/Random.h"
#include "runtime/text/Tokenizer.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "fbt's runtime reads little-endian token files in place"
#endif

namespace fbt {

//===----------------------------------------------------------------------===//
// TokenStream
//===----------------------------------------------------------------------===//

/// Owns the bytes behind one or more views: a vector or a file mapping.
struct TokenStream::Storage {
  std::vector<int32_t> owned;
  std::vector<uint8_t> trained; ///< empty: every token is trained on
  std::vector<int64_t> starts;  ///< conversation starts of instruction data
  void *mapping = nullptr;
  size_t mappingBytes = 0;

  Storage() = default;
  Storage(const Storage &) = delete;
  Storage &operator=(const Storage &) = delete;
  ~Storage() {
    if (mapping)
      ::munmap(mapping, mappingBytes);
  }
};

TokenStream::TokenStream(std::vector<int32_t> tokens, std::string source)
    : source_(std::move(source)) {
  auto storage = std::make_shared<Storage>();
  storage->owned = std::move(tokens);
  base_ = reinterpret_cast<const uint8_t *>(storage->owned.data());
  size_ = static_cast<int64_t>(storage->owned.size());
  width_ = 4;
  storage_ = std::move(storage);
}

TokenStream::TokenStream(std::vector<int32_t> tokens, std::vector<uint8_t> trained,
                         std::vector<int64_t> starts, std::string source)
    : TokenStream(std::move(tokens), std::move(source)) {
  if (trained.size() != static_cast<size_t>(size_))
    throw RuntimeError(source_ + ": " + std::to_string(trained.size()) +
                       " loss flags for " + std::to_string(size_) + " tokens");
  auto storage = std::const_pointer_cast<Storage>(storage_);
  storage->trained = std::move(trained);
  storage->starts = std::move(starts);
}

bool TokenStream::masked() const { return storage_ && !storage_->trained.empty(); }

bool TokenStream::trained(int64_t i) const {
  return !masked() || storage_->trained[static_cast<size_t>(first_ + i)] != 0;
}

int64_t TokenStream::trainedTargets() const {
  int64_t n = 0;
  for (int64_t i = 1; i < size_; ++i)
    n += trained(i);
  return n;
}

int64_t TokenStream::startsThrough(int64_t last) const {
  const std::vector<int64_t> &s = storage_->starts;
  auto from = std::lower_bound(s.begin(), s.end(), first_);
  auto to = std::upper_bound(s.begin(), s.end(), first_ + last);
  return to > from ? to - from : 0;
}

int64_t TokenStream::start(int64_t j) const {
  const std::vector<int64_t> &s = storage_->starts;
  auto from = std::lower_bound(s.begin(), s.end(), first_);
  return from[j] - first_;
}

int32_t TokenStream::operator[](int64_t i) const {
  const uint8_t *p = base_ + i * width_;
  if (width_ == 2) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  uint32_t v;
  std::memcpy(&v, p, 4);
  return static_cast<int32_t>(v);
}

void TokenStream::copy(int64_t begin, int64_t count, int32_t *out) const {
  if (begin < 0 || count < 0 || begin > size_ || count > size_ - begin)
    throw RuntimeError(source_ + ": tokens [" + std::to_string(begin) + ", " +
                       std::to_string(begin + count) + ") are out of range (" +
                       std::to_string(size_) + " tokens)");
  if (count == 0)
    return;
  if (width_ == 4) {
    std::memcpy(out, base_ + begin * 4, static_cast<size_t>(count) * 4);
    return;
  }
  for (int64_t i = 0; i < count; ++i)
    out[i] = (*this)[begin + i];
}

TokenStream TokenStream::slice(int64_t begin, int64_t count) const {
  if (begin < 0 || count < 0 || begin > size_ || count > size_ - begin)
    throw RuntimeError(source_ + ": slice [" + std::to_string(begin) + ", " +
                       std::to_string(begin + count) + ") is out of range (" +
                       std::to_string(size_) + " tokens)");
  TokenStream view = *this;
  view.base_ = base_ + begin * width_;
  view.first_ = first_ + begin;
  view.size_ = count;
  return view;
}

std::vector<int32_t> TokenStream::toVector() const {
  std::vector<int32_t> out(static_cast<size_t>(size_));
  copy(0, size_, out.data());
  return out;
}

//===----------------------------------------------------------------------===//
// Byte-level text
//===----------------------------------------------------------------------===//

std::vector<int32_t> tokenizeDocuments(std::string_view text, std::string_view docSeparator,
                                       const Tokenizer &tokenizer,
                                       const std::string &sourceName) {
  std::vector<int32_t> ids;
  ids.reserve(text.size() + 1);
  auto addDocument = [&](std::string_view doc) {
    if (doc.empty())
      return;
    ids.push_back(tokenizer.documentSeparator());
    try {
      std::vector<int32_t> d = tokenizer.encode(doc);
      ids.insert(ids.end(), d.begin(), d.end());
    } catch (const RuntimeError &e) {
      throw RuntimeError(sourceName + ": " + e.what());
    }
  };
  size_t start = 0;
  while (true) {
    size_t end = docSeparator.empty() ? std::string_view::npos
                                      : text.find(docSeparator, start);
    if (end == std::string_view::npos) {
      addDocument(text.substr(start));
      return ids;
    }
    addDocument(text.substr(start, end - start));
    start = end + docSeparator.size();
  }
}

std::vector<int32_t> tokenizeText(std::string_view text,
                                  std::string_view docSeparator,
                                  const std::string &sourceName) {
  // Checked over the whole text first, so the offset is the file's.
  if (const void *nul = std::memchr(text.data(), 0, text.size()))
    throw RuntimeError(
        sourceName + ": NUL byte at byte offset " +
        std::to_string(static_cast<const char *>(nul) - text.data()) +
        " (id 0 is the document separator, so text must not contain NUL)");
  return tokenizeDocuments(text, docSeparator, byteTokenizer(), sourceName);
}

std::string detokenize(const std::vector<int32_t> &ids) {
  return byteTokenizer().decode(ids);
}

TokenStream loadTextFile(const std::string &path,
                         std::string_view docSeparator) {
  std::string text = readFile(path);
  std::vector<int32_t> ids = tokenizeText(text, docSeparator, path);
  if (ids.empty())
    throw RuntimeError(path + ": no text");
  return TokenStream(std::move(ids), path);
}

//===----------------------------------------------------------------------===//
// .bin files
//===----------------------------------------------------------------------===//

void checkVocab(const TokenStream &tokens, int64_t vocabSize) {
  for (int64_t i = 0; i < tokens.size(); ++i) {
    int32_t id = tokens[i];
    if (id < 0 || id >= vocabSize)
      throw RuntimeError(tokens.source() + ": token " +
                         std::to_string(static_cast<uint32_t>(id)) +
                         " at offset " + std::to_string(i) +
                         " is not below the vocab size " +
                         std::to_string(vocabSize));
  }
}

TokenStream loadBinFile(const std::string &path, int64_t vocabSize,
                        int tokenBytes) {
  if (tokenBytes != 2 && tokenBytes != 4)
    throw RuntimeError(path + ": token width must be 2 or 4 bytes, got " +
                       std::to_string(tokenBytes));
  if (vocabSize <= 0 || vocabSize > std::numeric_limits<int32_t>::max())
    throw RuntimeError(path + ": vocab size " + std::to_string(vocabSize) +
                       " is out of range");
  const char *typeName = tokenBytes == 2 ? "uint16" : "uint32";

  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw RuntimeError(systemErrorMessage(path + ": cannot open"));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    std::string msg = systemErrorMessage(path + ": cannot stat");
    ::close(fd);
    throw RuntimeError(msg);
  }
  size_t bytes = static_cast<size_t>(st.st_size);
  // llm.c's header (256 int32: magic, version, token count) states the
  // width, which then wins over the name.
  size_t headerBytes = 0;
  int32_t head[3];
  if (S_ISREG(st.st_mode) && bytes >= kBinHeaderBytes &&
      ::pread(fd, head, sizeof head, 0) == (ssize_t)sizeof head &&
      (head[0] == kBinMagicU16 || head[0] == kBinMagicU32)) {
    tokenBytes = head[0] == kBinMagicU16 ? 2 : 4;
    typeName = tokenBytes == 2 ? "uint16" : "uint32";
    headerBytes = kBinHeaderBytes;
    if (head[2] < 0 || bytes - headerBytes != (size_t)head[2] * tokenBytes) {
      ::close(fd);
      throw RuntimeError(path + ": the header says " + std::to_string(head[2]) +
                         " " + typeName + " tokens, but " +
                         std::to_string(bytes - headerBytes) +
                         " bytes follow it (truncated?)");
    }
  }
  bytes -= headerBytes;
  if (!S_ISREG(st.st_mode) || bytes == 0 || bytes % tokenBytes != 0) {
    ::close(fd);
    if (!S_ISREG(st.st_mode))
      throw RuntimeError(path + ": not a regular file");
    if (bytes == 0)
      throw RuntimeError(path + ": no tokens (empty file)");
    throw RuntimeError(path + ": " + std::to_string(bytes) +
                       " bytes is not a whole number of " + typeName +
                       " tokens (" + std::to_string(tokenBytes) +
                       " bytes each; wrong dtype or truncated?)");
  }
  void *mapping = ::mmap(nullptr, bytes + headerBytes, PROT_READ, MAP_PRIVATE, fd, 0);
  std::string mmapError =
      mapping == MAP_FAILED ? systemErrorMessage(path + ": cannot mmap") : "";
  ::close(fd); // the mapping keeps the file alive
  if (mapping == MAP_FAILED)
    throw RuntimeError(mmapError);

  auto storage = std::make_shared<TokenStream::Storage>();
  storage->mapping = mapping;
  storage->mappingBytes = bytes + headerBytes;
  TokenStream stream;
  stream.base_ = static_cast<const uint8_t *>(mapping) + headerBytes;
  stream.size_ = static_cast<int64_t>(bytes) / tokenBytes;
  stream.width_ = tokenBytes;
  stream.source_ = path;
  stream.storage_ = std::move(storage);

  // One pass over the file now, so a bad id is reported with its offset
  // before training starts.
  for (int64_t i = 0; i < stream.size_; ++i) {
    uint32_t id = static_cast<uint32_t>(stream[i]);
    if (id >= static_cast<uint64_t>(vocabSize))
      throw RuntimeError(
          path + ": token " + std::to_string(id) + " at offset " +
          std::to_string(i) + " (byte " + std::to_string(i * tokenBytes) +
          ") is not below the vocab size " + std::to_string(vocabSize));
  }
  return stream;
}

void writeBinFile(const std::string &path, const std::vector<int32_t> &ids,
                  int64_t vocabSize) {
  bool narrow = vocabSize <= 65536;
  std::vector<int32_t> header(kBinHeaderBytes / 4, 0);
  header[0] = narrow ? kBinMagicU16 : kBinMagicU32;
  header[1] = narrow ? 1 : 7; // llm.c's versions for GPT-2 and Llama 3 ids
  header[2] = (int32_t)ids.size();
  if ((int64_t)ids.size() > INT32_MAX)
    throw RuntimeError(path + ": " + std::to_string(ids.size()) +
                       " tokens do not fit one file's header; split the input");
  std::string body;
  if (narrow) {
    std::vector<uint16_t> u16(ids.begin(), ids.end());
    body.assign(reinterpret_cast<const char *>(u16.data()), u16.size() * 2);
  } else {
    body.assign(reinterpret_cast<const char *>(ids.data()), ids.size() * 4);
  }
  writeFileAtomic(path, {std::string_view(reinterpret_cast<const char *>(header.data()),
                                          kBinHeaderBytes),
                         body});
}





//===----------------------------------------------------------------------===//
// Splits and batches
//===----------------------------------------------------------------------===//

static void checkBatchShape(const TokenStream &tokens, int64_t batchSize,
                            int64_t seqLen, const char *what) {
  if (batchSize <= 0 || seqLen <= 0)
    throw RuntimeError(std::string(what) +
                       ": batch size and sequence length "
                       "must be positive, got " +
                       std::to_string(batchSize) + " x " +
                       std::to_string(seqLen));
  if (tokens.size() < seqLen + 1)
    throw RuntimeError(tokens.source() + ": " + what + " has " +
                       std::to_string(tokens.size()) +
                       " tokens, too few for one window of sequence length " +
                       std::to_string(seqLen) + " (needs " +
                       std::to_string(seqLen + 1) + ")");
}

/// Splits the window at `offset` into row b of inputs and targets.
static void fillRow(const TokenStream &tokens, int64_t offset, int64_t row,
                    Batch &batch) {
  int64_t T = batch.seqLen;
  std::vector<int32_t> window(static_cast<size_t>(T + 1));
  tokens.copy(offset, T + 1, window.data());
  std::memcpy(batch.inputs.data() + row * T, window.data(),
              static_cast<size_t>(T) * 4);
  std::memcpy(batch.targets.data() + row * T, window.data() + 1,
              static_cast<size_t>(T) * 4);
  if (tokens.masked())
    for (int64_t t = 0; t < T; ++t)
      if (!tokens.trained(offset + t + 1))
        batch.targets[static_cast<size_t>(row * T + t)] = kIgnoredTarget;
}

static Batch emptyBatch(int64_t batchSize, int64_t seqLen) {
  Batch batch;
  batch.batchSize = batchSize;
  batch.seqLen = seqLen;
  batch.inputs.resize(static_cast<size_t>(batchSize * seqLen));
  batch.targets.resize(static_cast<size_t>(batchSize * seqLen));
  return batch;
}

Batch sampleBatch(const TokenStream &tokens, int64_t batchSize, int64_t seqLen,
                  uint64_t seed, int64_t step, int64_t micro, int64_t microBatches) {
  checkBatchShape(tokens, batchSize, seqLen, "training data");
  if (step < 0)
    throw RuntimeError("step must be >= 0, got " + std::to_string(step));
  if (microBatches < 1 || micro < 0 || micro >= microBatches)
    throw RuntimeError("micro-batch " + std::to_string(micro) + " of " +
                       std::to_string(microBatches) + " does not exist");
  // Offsets 0 .. n - T - 1 all leave room for the window's last target.
  uint64_t offsets = static_cast<uint64_t>(tokens.size() - seqLen);
  int64_t conversations = 0;
  if (tokens.masked()) {
    conversations = tokens.startsThrough(tokens.size() - seqLen - 1);
    if (conversations == 0)
      throw RuntimeError(tokens.source() + ": no conversation starts a window of " +
                         std::to_string(seqLen + 1) + " tokens");
    offsets = static_cast<uint64_t>(conversations);
  }
  Batch batch = emptyBatch(batchSize, seqLen);
  for (int64_t b = 0; b < batchSize; ++b) {
    uint64_t counter = static_cast<uint64_t>((step * microBatches + micro) * batchSize + b);
    auto offset = static_cast<int64_t>(
        rng::uniformInt(seed, rng::streams::kBatch, counter, offsets));
    if (conversations)
      offset = tokens.start(offset);
    fillRow(tokens, offset, b, batch);
  }
  return batch;
}

ValBatches::ValBatches(TokenStream tokens, int64_t batchSize, int64_t seqLen,
                       int64_t maxWindows)
    : tokens_(std::move(tokens)), batchSize_(batchSize), seqLen_(seqLen) {
  checkBatchShape(tokens_, batchSize, seqLen, "validation data");
  streamWindows_ = (tokens_.size() - 1) / seqLen;
  // Whole batches: the count asked for rounded up, all the stream holds at most.
  numBatches_ = streamWindows_ / batchSize;
  if (maxWindows > 0)
    numBatches_ = std::min(numBatches_, (maxWindows + batchSize - 1) / batchSize);
  if (numBatches_ == 0)
    throw RuntimeError(
        tokens_.source() + ": validation data has " +
        std::to_string(tokens_.size()) + " tokens, too few for one batch of " +
        std::to_string(batchSize) + " x " + std::to_string(seqLen) +
        " (needs " + std::to_string(batchSize * seqLen + 1) + ")");
}

int64_t ValBatches::offset(int64_t i) const {
  // floor(i * W / count): the taken windows spread evenly over all W.
  return (i * streamWindows_ / windows()) * seqLen_;
}

Batch ValBatches::operator[](int64_t index) const {
  if (index < 0 || index >= numBatches_)
    throw RuntimeError("validation batch " + std::to_string(index) +
                       " is out of range (" + std::to_string(numBatches_) +
                       " batches)");
  Batch batch = emptyBatch(batchSize_, seqLen_);
  for (int64_t b = 0; b < batchSize_; ++b)
    fillRow(tokens_, offset(index * batchSize_ + b), b, batch);
  return batch;
}

} // namespace fbt
