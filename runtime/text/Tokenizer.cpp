//===- Tokenizer.cpp - byte-level, GPT-2 BPE and SentencePiece ------------===//

#include "runtime/text/Tokenizer.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/base/Json.h"
#include "runtime/text/Gpt2Bytes.h"
#include "runtime/text/Gpt2Vocabulary.h"

#ifdef FBT_HAVE_PCRE2
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#endif
#ifdef FBT_HAVE_SENTENCEPIECE
#include <sentencepiece_processor.h>
#endif

#include <cstdlib>
#include <unordered_map>

namespace fbt {
namespace {

//===----------------------------------------------------------------------===//
// bytes
//===----------------------------------------------------------------------===//

class ByteTokenizer : public Tokenizer {
public:
  std::string name() const override { return "bytes"; }
  int64_t vocabSize() const override { return 256; }
  int32_t documentSeparator() const override { return 0; }
  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> ids;
    ids.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\0') // id 0 separates documents
        throw RuntimeError("a NUL byte at offset " + std::to_string(i) +
                           " (byte-level text cannot hold one)");
      ids.push_back((uint8_t)text[i]);
    }
    return ids;
  }
  size_t splitPoint(std::string_view text, size_t from) const override {
    return from < text.size() ? from : std::string_view::npos;
  }
  std::string decode(const std::vector<int32_t> &ids) const override {
    std::string out;
    for (int32_t id : ids) {
      if (id < 0 || id > 255)
        throw RuntimeError("token " + std::to_string(id) +
                           " is not a byte-level id (0..255)");
      if (id != 0)
        out += (char)id;
    }
    return out;
  }
};

//===----------------------------------------------------------------------===//
// GPT-2 byte-level BPE
//===----------------------------------------------------------------------===//

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

#ifdef FBT_HAVE_PCRE2

/// GPT-2's pre-tokenizer: contractions, letters, numbers, other symbols
/// (each with an optional leading space), then whitespace runs.
constexpr const char *kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

/// The raw bytes a vocabulary string stands for; empty if it has a code
/// point outside the byte alphabet (then it is not a byte-level token).
std::string rawBytes(const std::string &s, const std::vector<int> &byteOf,
                     bool &ok) {
  std::string out;
  ok = true;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    uint32_t cp;
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
    if (i + len > s.size()) {
      ok = false;
      return out;
    }
    cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (int k = 1; k < len; ++k)
      cp = (cp << 6) | (s[i + k] & 0x3F);
    if (cp >= byteOf.size() || byteOf[cp] < 0) {
      ok = false;
      return out;
    }
    out += (char)byteOf[cp];
    i += len;
  }
  return out;
}

class Gpt2Bpe : public Tokenizer {
public:
  Gpt2Bpe(std::string name, const gpt2::Vocabulary &vocabulary, const std::string &source)
      : name_(std::move(name)) {
    const auto &vocab = vocabulary.tokens;
    const auto &merges = vocabulary.merges;
    std::vector<int> byteOf = gpt2::byteOfCodePoint();
    std::unordered_map<std::string, int32_t> idOfRaw;
    int64_t size = 0;
    for (const auto &[token, id] : vocab)
      size = std::max(size, id + 1);
    tokenBytes_.resize(size);
    for (const auto &[token, id] : vocab) {
      if (id < 0 || id > INT32_MAX)
        throw RuntimeError(source + ": token '" + token + "' has id " +
                           std::to_string(id));
      bool ok;
      std::string raw = rawBytes(token, byteOf, ok);
      if (!ok) { // a special token (e.g. <|endoftext|>): decodes as itself
        tokenBytes_[id] = token;
        special_[token] = (int32_t)id;
        continue;
      }
      tokenBytes_[id] = raw;
      idOfRaw[raw] = (int32_t)id;
    }
    // Symbols: the 256 bytes, then each merge's result.
    std::unordered_map<std::string, int32_t> symbolOf;
    for (int b = 0; b < 256; ++b) {
      symbolOf[std::string(1, (char)b)] = b;
      auto it = idOfRaw.find(std::string(1, (char)b));
      if (it == idOfRaw.end())
        throw RuntimeError(source + ": byte " + std::to_string(b) +
                           " has no token: not a byte-level vocabulary");
      symbolToken_.push_back(it->second);
    }
    for (size_t r = 0; r < merges.size(); ++r) {
      bool okA, okB;
      std::string a = rawBytes(merges[r].first, byteOf, okA);
      std::string b = rawBytes(merges[r].second, byteOf, okB);
      auto sa = symbolOf.find(a), sb = symbolOf.find(b);
      if (!okA || !okB || sa == symbolOf.end() || sb == symbolOf.end())
        throw RuntimeError(source + ": merge " + std::to_string(r + 1) + " ('" +
                           merges[r].first + " " + merges[r].second +
                           "') joins a symbol no earlier merge made");
      auto [res, inserted] = symbolOf.try_emplace(a + b, (int32_t)symbolToken_.size());
      if (inserted) {
        auto id = idOfRaw.find(a + b);
        symbolToken_.push_back(id == idOfRaw.end() ? -1 : id->second);
      }
      merges_.try_emplace(pairKey(sa->second, sb->second),
                          Merge{(int32_t)r, res->second});
    }
    // GPT-2 spells <|endoftext|> in printable bytes; others list it apart.
    auto eot = special_.find("<|endoftext|>");
    auto plain = idOfRaw.find("<|endoftext|>");
    if (eot == special_.end() && plain == idOfRaw.end())
      throw RuntimeError(source + ": no <|endoftext|> token to separate documents");
    eot_ = eot != special_.end() ? eot->second : plain->second;

    int error;
    PCRE2_SIZE offset;
    pattern_ = pcre2_compile((PCRE2_SPTR)kGpt2Pattern, PCRE2_ZERO_TERMINATED,
                             PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
    if (!pattern_)
      throw RuntimeError("cannot compile GPT-2's pre-tokenizing pattern");
    pcre2_jit_compile(pattern_, PCRE2_JIT_COMPLETE); // interpreted if no JIT
  }
  ~Gpt2Bpe() override { pcre2_code_free(pattern_); }

  std::string name() const override { return name_; }
  int64_t vocabSize() const override { return (int64_t)tokenBytes_.size(); }
  int32_t documentSeparator() const override { return eot_; }

  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> ids;
    pcre2_match_data *match = pcre2_match_data_create_from_pattern(pattern_, nullptr);
    size_t at = 0;
    uint32_t checked = 0; // the first match checks all the text's UTF-8
    while (at < text.size()) {
      int rc = pcre2_match(pattern_, (PCRE2_SPTR)text.data(), text.size(), at,
                           checked, match, nullptr);
      checked = PCRE2_NO_UTF_CHECK;
      if (rc < 0) {
        std::string why = rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21
                              ? "invalid UTF-8 at byte " +
                                    std::to_string(pcre2_get_startchar(match))
                              : "cannot pre-tokenize the text at byte " +
                                    std::to_string(at);
        pcre2_match_data_free(match);
        throw RuntimeError(why);
      }
      PCRE2_SIZE *span = pcre2_get_ovector_pointer(match);
      bpe(text.substr(span[0], span[1] - span[0]), ids);
      at = span[1];
    }
    pcre2_match_data_free(match);
    return ids;
  }

  /// After a newline and before a printable ASCII character: the pattern
  /// ends a whitespace run there (no \s+(?!\S) reaches past it, and a
  /// leading-space alternative needs a space, not a newline).
  size_t splitPoint(std::string_view text, size_t from) const override {
    for (size_t p = std::max<size_t>(from, 1); p < text.size(); ++p)
      if (text[p - 1] == '\n' && text[p] > ' ' && text[p] < 0x7f)
        return p;
    return std::string_view::npos;
  }

  std::string decode(const std::vector<int32_t> &ids) const override {
    std::string out;
    for (int32_t id : ids) {
      if (id < 0 || id >= (int64_t)tokenBytes_.size())
        throw RuntimeError("token " + std::to_string(id) +
                           " is outside the vocabulary (" +
                           std::to_string(tokenBytes_.size()) + ")");
      if (id != eot_)
        out += tokenBytes_[id];
    }
    return out;
  }

private:
  struct Merge {
    int32_t rank, result;
  };
  static uint64_t pairKey(int32_t a, int32_t b) {
    return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
  }

  /// One pre-token's ids: merge the adjacent pair of lowest rank, every
  /// occurrence left to right, until no pair merges (GPT-2's encoder.py).
  void bpe(std::string_view piece, std::vector<int32_t> &ids) const {
    // Words repeat: each thread keeps the pieces it has seen.
    thread_local std::unordered_map<const Gpt2Bpe *,
                                    std::unordered_map<std::string, std::vector<int32_t>>>
        caches;
    auto &cache = caches[this];
    if (auto hit = cache.find(std::string(piece)); hit != cache.end()) {
      ids.insert(ids.end(), hit->second.begin(), hit->second.end());
      return;
    }
    std::vector<int32_t> sym(piece.begin(), piece.end());
    for (int32_t &s : sym)
      s = (uint8_t)s;
    while (sym.size() > 1) {
      const Merge *best = nullptr;
      size_t at = 0;
      for (size_t i = 0; i + 1 < sym.size(); ++i) {
        auto it = merges_.find(pairKey(sym[i], sym[i + 1]));
        if (it != merges_.end() && (!best || it->second.rank < best->rank))
          best = &it->second, at = i;
      }
      if (!best)
        break;
      int32_t a = sym[at], b = sym[at + 1];
      std::vector<int32_t> next;
      for (size_t i = 0; i < sym.size(); ++i) {
        if (i + 1 < sym.size() && sym[i] == a && sym[i + 1] == b)
          next.push_back(best->result), ++i;
        else
          next.push_back(sym[i]);
      }
      sym = std::move(next);
    }
    std::vector<int32_t> out;
    for (int32_t s : sym) {
      if (symbolToken_[s] < 0)
        throw RuntimeError("a merge made a symbol that is not in the vocabulary");
      out.push_back(symbolToken_[s]);
    }
    ids.insert(ids.end(), out.begin(), out.end());
    if (cache.size() > (1 << 18))
      cache.clear();
    cache.emplace(std::string(piece), std::move(out));
  }

  std::string name_;
  std::vector<std::string> tokenBytes_; // id -> the bytes it stands for
  std::unordered_map<std::string, int32_t> special_;
  std::vector<int32_t> symbolToken_; // BPE symbol -> token id (-1: none)
  std::unordered_map<uint64_t, Merge> merges_;
  int32_t eot_ = -1;
  pcre2_code *pattern_ = nullptr;
};

std::unique_ptr<Tokenizer> loadGpt2(const std::string &path) {
  return std::make_unique<Gpt2Bpe>("gpt2:" + path, gpt2::readVocabulary(path), path);
}
#else
std::unique_ptr<Tokenizer> loadGpt2(const std::string &path) {
  throw RuntimeError("tokenizer 'gpt2:" + path + "': this fbt was built without "
                     "PCRE2 (Debian's libpcre2-dev), which GPT-2 BPE needs");
}
#endif

//===----------------------------------------------------------------------===//
// SentencePiece
//===----------------------------------------------------------------------===//

#ifdef FBT_HAVE_SENTENCEPIECE
class SentencePiece : public Tokenizer {
public:
  explicit SentencePiece(const std::string &path) : name_("sp:" + path) {
    auto status = sp_.Load(path);
    if (!status.ok())
      throw RuntimeError(path + ": not a SentencePiece model (" +
                         status.ToString() + ")");
    separator_ = sp_.bos_id() >= 0 ? sp_.bos_id() : sp_.eos_id();
    if (separator_ < 0)
      throw RuntimeError(path + ": the model has neither BOS nor EOS to "
                                "separate documents");
  }
  std::string name() const override { return name_; }
  int64_t vocabSize() const override { return sp_.GetPieceSize(); }
  int32_t documentSeparator() const override { return separator_; }
  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int> ids;
    auto status = sp_.Encode(text, &ids);
    if (!status.ok())
      throw RuntimeError("SentencePiece: " + status.ToString());
    return std::vector<int32_t>(ids.begin(), ids.end());
  }
  std::string decode(const std::vector<int32_t> &ids) const override {
    std::vector<int> in;
    for (int32_t id : ids) {
      if (id < 0 || id >= sp_.GetPieceSize())
        throw RuntimeError("token " + std::to_string(id) +
                           " is outside the vocabulary (" +
                           std::to_string(sp_.GetPieceSize()) + ")");
      in.push_back(id);
    }
    std::string out;
    auto status = sp_.Decode(in, &out);
    if (!status.ok())
      throw RuntimeError("SentencePiece: " + status.ToString());
    return out;
  }

private:
  std::string name_;
  sentencepiece::SentencePieceProcessor sp_;
  int32_t separator_ = -1;
};

std::unique_ptr<Tokenizer> loadSentencePiece(const std::string &path) {
  return std::make_unique<SentencePiece>(path);
}
#else
std::unique_ptr<Tokenizer> loadSentencePiece(const std::string &path) {
  throw RuntimeError("tokenizer 'sp:" + path + "': this fbt was built without "
                     "SentencePiece (Debian's libsentencepiece-dev)");
}
#endif

} // namespace

/// `path` made absolute, so that a run records where its tokenizer is
/// wherever it is read from later.
static std::string absolute(const std::string &path) {
  char *real = ::realpath(path.c_str(), nullptr);
  if (!real)
    return path; // loading it names what is wrong
  std::string out = real;
  std::free(real);
  return out;
}

const Tokenizer &byteTokenizer() {
  static const ByteTokenizer bytes;
  return bytes;
}

std::string canonicalTokenizerName(const std::string &what) {
  if (what == "bytes" || what.empty())
    return "bytes";
  if (what.rfind("gpt2:", 0) == 0)
    return "gpt2:" + absolute(what.substr(5));
  if (what.rfind("sp:", 0) == 0)
    return "sp:" + absolute(what.substr(3));
  return (endsWith(what, ".model") ? "sp:" : "gpt2:") + absolute(what);
}

std::vector<int32_t> encodeDocument(const Tokenizer &tok, std::string_view text) {
  std::vector<int32_t> ids = {tok.documentSeparator()};
  std::vector<int32_t> body = tok.encode(text);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

std::unique_ptr<Tokenizer> loadTokenizer(const std::string &what) {
  std::string name = canonicalTokenizerName(what);
  if (name == "bytes")
    return std::make_unique<ByteTokenizer>();
  if (!isFile(what) && !isDir(what) && what.rfind("gpt2:", 0) != 0 &&
      what.rfind("sp:", 0) != 0)
    throw RuntimeError("tokenizer '" + what + "': expected 'bytes', gpt2:PATH, "
                       "sp:PATH, or an existing file or folder");
  if (name.rfind("sp:", 0) == 0)
    return loadSentencePiece(name.substr(3));
  return loadGpt2(name.substr(5));
}

} // namespace fbt
