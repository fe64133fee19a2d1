//===- Gpt2Vocabulary.cpp - a byte-level BPE vocabulary's files -----------===//

#include "runtime/text/Gpt2Vocabulary.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/base/Json.h"
#include "runtime/text/Gpt2Bytes.h"

#include <algorithm>

namespace fbt::gpt2 {

namespace {


std::vector<std::pair<std::string, int64_t>> vocabOf(const Json &object,
                                                     const std::string &source) {
  if (!object.is_object())
    throw RuntimeError(source + ": the vocabulary is not a JSON object");
  std::vector<std::pair<std::string, int64_t>> vocab;
  for (const auto &[token, id] : asObject(object)) {
    if (!isInteger(id))
      throw RuntimeError(source + ": token '" + token + "' has no integer id");
    vocab.push_back({token, asInt(id)});
  }
  return vocab;
}

/// Merges as "a b" lines (vocab.bpe / merges.txt: a "#version" line first).
std::vector<std::pair<std::string, std::string>> mergesOf(const std::string &text,
                                                          const std::string &source) {
  std::vector<std::pair<std::string, std::string>> merges;
  size_t line = 0;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos)
      end = text.size();
    std::string l = text.substr(at, end - at);
    at = end + 1;
    ++line;
    if (!l.empty() && l.back() == '\r')
      l.pop_back();
    if (l.empty() || (line == 1 && l.rfind("#version", 0) == 0))
      continue;
    size_t space = l.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == l.size() ||
        l.find(' ', space + 1) != std::string::npos)
      throw RuntimeError(source + ":" + std::to_string(line) +
                         ": expected two symbols separated by one space");
    merges.push_back({l.substr(0, space), l.substr(space + 1)});
  }
  return merges;
}

/// Why a pre-tokenizer step is not GPT-2's, or "" if it is.
std::string notGpt2Step(const Json &step) {
  const Json *type = step.is_object() ? jsonFind(step, "type") : nullptr;
  std::string name = type && type->is_string() ? asString(*type) : "?";
  if (name == "ByteLevel") {
    if (const Json *re = jsonFind(step, "use_regex"); re && re->is_boolean() && !asBool(*re))
      return "ByteLevel without its regex (use_regex false: another step splits the "
             "text, as in Llama 3's tokenizer)";
    if (const Json *p = jsonFind(step, "add_prefix_space");
        p && p->is_boolean() && asBool(*p))
      return "ByteLevel with add_prefix_space";
    return "";
  }
  if (name == "Split")
    return "'Split' (a pattern of its own, as Llama 3's tokenizer has)";
  if (name == "Metaspace")
    return "'Metaspace' (Llama 2's SentencePiece-style tokenizer: give its "
           "tokenizer.model as sp:PATH)";
  return "'" + name + "'";
}

/// Refuses a tokenizer.json that does not tokenize as GPT-2 does (see the
/// header).
void checkTokenizesAsGpt2(const Json &root, const Json &model, const std::string &path) {
  const std::string unsupported =
      path + ": fbt's BPE tokenizes as GPT-2 does, and this tokenizer does not: ";
  if (const Json *fb = jsonFind(model, "byte_fallback"); fb && fb->is_boolean() && asBool(*fb))
    throw RuntimeError(unsupported + "its BPE model has byte_fallback (Llama 2's "
                                     "SentencePiece-style vocabulary: give its "
                                     "tokenizer.model as sp:PATH)");
  if (const Json *norm = jsonFind(root, "normalizer"); norm && !norm->is_null()) {
    const Json *type = norm->is_object() ? jsonFind(*norm, "type") : nullptr;
    throw RuntimeError(unsupported + "it has a normalizer (" +
                       (type && type->is_string() ? asString(*type) : "?") + ")");
  }
  const Json *pre = jsonFind(root, "pre_tokenizer");
  if (!pre || pre->is_null())
    throw RuntimeError(unsupported + "it has no pre_tokenizer (byte-level BPE has "
                                     "ByteLevel)");
  std::string why;
  const Json *type = pre->is_object() ? jsonFind(*pre, "type") : nullptr;
  if (type && type->is_string() && asString(*type) == "Sequence") {
    const Json &steps = jsonAt(*pre, "pretokenizers");
    for (const Json &step : asArray(steps))
      if (why.empty())
        why = notGpt2Step(step);
    if (why.empty() && steps.size() != 1)
      why = "ByteLevel more than once";
  } else {
    why = notGpt2Step(*pre);
  }
  if (!why.empty())
    throw RuntimeError(unsupported + "pre_tokenizer " + why);
}

Vocabulary readTokenizerJson(const std::string &path) {
  Json root = parseJson(readFile(path), path);
  const Json *model = jsonFind(root, "model");
  const Json *type = model ? jsonFind(*model, "type") : nullptr;
  if (!type || !type->is_string() || asString(*type) != "BPE")
    throw RuntimeError(path + ": not a tokenizer.json with a BPE model" +
                       (type && type->is_string() ? " (its model is " + asString(*type) + ")"
                                                  : std::string()));
  checkTokenizesAsGpt2(root, *model, path);
  Vocabulary v;
  v.tokens = vocabOf(jsonAt(*model, "vocab"), path);
  if (const Json *added = jsonFind(root, "added_tokens"); added && added->is_array())
    for (const Json &t : asArray(*added))
      if (t.is_object() && jsonFind(t, "content") && jsonFind(t, "id")) {
        int64_t id = asInt(jsonAt(t, "id"));
        v.added.push_back(id);
        auto same = [&](const auto &token) { return token.second == id; };
        if (std::none_of(v.tokens.begin(), v.tokens.end(), same))
          v.tokens.push_back({asString(jsonAt(t, "content")), id});
      }
  std::string mergesText;
  for (const Json &m : asArray(jsonAt(*model, "merges"))) {
    if (m.is_string())
      mergesText += asString(m) + "\n";
    else if (m.is_array() && m.size() == 2)
      mergesText += asString(jsonAt(m, 0)) + " " + asString(jsonAt(m, 1)) + "\n";
    else
      throw RuntimeError(path + ": a merge is neither \"a b\" nor [\"a\", \"b\"]");
  }
  v.merges = mergesOf(mergesText, path);
  return v;
}

} // namespace

Vocabulary readVocabulary(const std::string &path) {
  if (!isDir(path))
    return readTokenizerJson(path);
  for (auto [vocabName, mergesName] :
       {std::pair{"encoder.json", "vocab.bpe"}, std::pair{"vocab.json", "merges.txt"}}) {
    std::string vp = path + "/" + vocabName, mp = path + "/" + mergesName;
    if (isFile(vp) && isFile(mp))
      return {vocabOf(parseJson(readFile(vp), vp), vp), mergesOf(readFile(mp), mp), {}};
  }
  throw RuntimeError(path + ": no encoder.json + vocab.bpe or vocab.json + "
                            "merges.txt in this folder");
}

std::vector<std::string> tokensById(const Vocabulary &v) {
  int64_t size = 0;
  for (const auto &[token, id] : v.tokens)
    size = std::max(size, id + 1);
  std::vector<std::string> out(size);
  for (const auto &[token, id] : v.tokens)
    if (id >= 0)
      out[id] = token;
  return out;
}

Vocabulary byteVocabulary() {
  Vocabulary v;
  std::vector<std::string> symbols = byteSymbols();
  for (int64_t b = 0; b < 256; ++b)
    v.tokens.push_back({symbols[b], b});
  return v;
}

bool isByteVocabulary(const Vocabulary &v) {
  return v.merges.empty() && v.added.empty() && v.tokens.size() == 256 &&
         tokensById(v) == tokensById(byteVocabulary());
}

std::string tokenizerJson(const Vocabulary &v) {
  auto byteLevel = [] {
    return Json{{"type", "ByteLevel"},
                {"add_prefix_space", false},
                {"trim_offsets", true},
                {"use_regex", true}};
  };
  Json vocab = Json::object(), merges = Json::array(), added = Json::array();
  std::vector<std::string> byId = tokensById(v);
  for (int64_t id = 0; id < (int64_t)byId.size(); ++id) // added ones too, as GPT-2's
    if (!byId[id].empty())
      vocab[byId[id]] = id;
  for (const auto &[a, b] : v.merges)
    merges.push_back(a + " " + b);
  for (int64_t id : v.added)
    added.push_back(Json{{"id", id},
                         {"content", byId.at(id)},
                         {"single_word", false},
                         {"lstrip", false},
                         {"rstrip", false},
                         {"normalized", false},
                         {"special", true}});
  Json root{{"version", "1.0"},
            {"truncation", nullptr},
            {"padding", nullptr},
            {"added_tokens", added},
            {"normalizer", nullptr},
            {"pre_tokenizer", byteLevel()},
            {"post_processor", byteLevel()},
            {"decoder", byteLevel()},
            {"model", Json{{"type", "BPE"},
                           {"dropout", nullptr},
                           {"unk_token", nullptr},
                           {"continuing_subword_prefix", nullptr},
                           {"end_of_word_suffix", nullptr},
                           {"fuse_unk", false},
                           {"byte_fallback", false},
                           {"vocab", vocab},
                           {"merges", merges}}}};
  return dumpJson(root, 2) + "\n";
}

} // namespace fbt::gpt2
