//===- Json.cpp - A small JSON value, parser and writer -------------------===//

#include "runtime/Json.h"

#include "runtime/Error.h"
#include "runtime/FileIO.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <unordered_set>

namespace fbt {

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

Json::Json(long long v)
    : kind_(Kind::Number), exactInt_(true), int_(v),
      number_(static_cast<double>(v)) {}

Json::Json(unsigned long long v) : kind_(Kind::Number) {
  if (v <=
      static_cast<unsigned long long>(std::numeric_limits<int64_t>::max())) {
    exactInt_ = true;
    int_ = static_cast<int64_t>(v);
  }
  number_ = static_cast<double>(v);
}

Json::Json(float v) : kind_(Kind::Number) {
  // Hold the shortest decimal that reads back as this float, so a float loss
  // of 0.1f is written "0.1" rather than "0.10000000149011612".
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  if (!std::isfinite(v) || res.ec != std::errc() ||
      std::from_chars(buf, res.ptr, number_).ec != std::errc())
    number_ = static_cast<double>(v);
}

const char *Json::kindName(Kind kind) {
  switch (kind) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return "a bool";
  case Kind::Number:
    return "a number";
  case Kind::String:
    return "a string";
  case Kind::Array:
    return "an array";
  case Kind::Object:
    return "an object";
  }
  return "?";
}

static RuntimeError kindError(const char *expected, Json::Kind got) {
  return RuntimeError(std::string("expected ") + expected + ", got " +
                      Json::kindName(got));
}

bool Json::isInteger() const {
  if (kind_ != Kind::Number)
    return false;
  if (exactInt_)
    return true;
  // [-2^63, 2^63): both bounds are exact doubles.
  return std::isfinite(number_) && number_ == std::floor(number_) &&
         number_ >= -0x1p63 && number_ < 0x1p63;
}

bool Json::asBool() const {
  if (kind_ != Kind::Bool)
    throw kindError("a bool", kind_);
  return bool_;
}

double Json::asDouble() const {
  if (kind_ != Kind::Number)
    throw kindError("a number", kind_);
  return number_;
}

int64_t Json::asInt() const {
  if (kind_ != Kind::Number)
    throw kindError("an integer", kind_);
  if (exactInt_)
    return int_;
  if (!isInteger())
    throw RuntimeError("expected an integer, got " + dump());
  return static_cast<int64_t>(number_);
}

const std::string &Json::asString() const {
  if (kind_ != Kind::String)
    throw kindError("a string", kind_);
  return string_;
}

const Json::Array &Json::asArray() const {
  if (kind_ != Kind::Array)
    throw kindError("an array", kind_);
  return array_;
}

Json::Array &Json::asArray() {
  if (kind_ != Kind::Array)
    throw kindError("an array", kind_);
  return array_;
}

const Json::Object &Json::asObject() const {
  if (kind_ != Kind::Object)
    throw kindError("an object", kind_);
  return object_;
}

Json::Object &Json::asObject() {
  if (kind_ != Kind::Object)
    throw kindError("an object", kind_);
  return object_;
}

size_t Json::size() const {
  if (kind_ == Kind::Array)
    return array_.size();
  if (kind_ == Kind::Object)
    return object_.size();
  return 0;
}

const Json &Json::operator[](size_t index) const {
  const Array &a = asArray();
  if (index >= a.size())
    throw RuntimeError("array index " + std::to_string(index) +
                       " out of range (size " + std::to_string(a.size()) + ")");
  return a[index];
}

Json &Json::operator[](size_t index) {
  return const_cast<Json &>(static_cast<const Json &>(*this)[index]);
}

void Json::push_back(Json value) {
  if (kind_ == Kind::Null)
    kind_ = Kind::Array;
  asArray().push_back(std::move(value));
}

const Json *Json::find(std::string_view key) const {
  if (kind_ != Kind::Object)
    return nullptr;
  for (const Member &m : object_)
    if (m.first == key)
      return &m.second;
  return nullptr;
}

Json *Json::find(std::string_view key) {
  return const_cast<Json *>(static_cast<const Json *>(this)->find(key));
}

const Json &Json::at(std::string_view key) const {
  asObject();
  if (const Json *v = find(key))
    return *v;
  throw RuntimeError("missing key '" + std::string(key) + "'");
}

Json &Json::operator[](std::string_view key) {
  if (kind_ == Kind::Null)
    kind_ = Kind::Object;
  if (Json *v = find(key))
    return *v;
  Object &o = asObject();
  o.emplace_back(std::string(key), Json());
  return o.back().second;
}

void Json::set(std::string_view key, Json value) {
  (*this)[key] = std::move(value);
}

bool Json::operator==(const Json &other) const {
  if (kind_ != other.kind_)
    return false;
  switch (kind_) {
  case Kind::Null:
    return true;
  case Kind::Bool:
    return bool_ == other.bool_;
  case Kind::Number:
    if (exactInt_ && other.exactInt_)
      return int_ == other.int_;
    return number_ == other.number_;
  case Kind::String:
    return string_ == other.string_;
  case Kind::Array:
    return array_ == other.array_;
  case Kind::Object:
    return object_ == other.object_;
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

void appendJsonString(std::string &out, std::string_view s) {
  static const char hex[] = "0123456789abcdef";
  out += '"';
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20) {
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 15];
      } else {
        out += ch;
      }
    }
  }
  out += '"';
}

static void appendNumber(std::string &out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, v); // shortest round trip
  std::string_view text(buf, static_cast<size_t>(res.ptr - buf));
  out += text;
  // Keep a double a double when read back: 100.0 is written "100.0".
  if (text.find_first_of(".e") == std::string_view::npos)
    out += ".0";
}

static void newline(std::string &out, int indent, int depth) {
  out += '\n';
  out.append(static_cast<size_t>(indent) * static_cast<size_t>(depth), ' ');
}

void Json::dumpTo(std::string &out, int indent, int depth) const {
  bool pretty = indent >= 0;
  switch (kind_) {
  case Kind::Null:
    out += "null";
    return;
  case Kind::Bool:
    out += bool_ ? "true" : "false";
    return;
  case Kind::Number:
    if (exactInt_)
      out += std::to_string(int_);
    else
      appendNumber(out, number_);
    return;
  case Kind::String:
    appendJsonString(out, string_);
    return;
  case Kind::Array:
    out += '[';
    for (size_t i = 0; i < array_.size(); ++i) {
      if (i)
        out += ',';
      if (pretty)
        newline(out, indent, depth + 1);
      array_[i].dumpTo(out, indent, depth + 1);
    }
    if (pretty && !array_.empty())
      newline(out, indent, depth);
    out += ']';
    return;
  case Kind::Object:
    out += '{';
    for (size_t i = 0; i < object_.size(); ++i) {
      if (i)
        out += ',';
      if (pretty)
        newline(out, indent, depth + 1);
      appendJsonString(out, object_[i].first);
      out += pretty ? ": " : ":";
      object_[i].second.dumpTo(out, indent, depth + 1);
    }
    if (pretty && !object_.empty())
      newline(out, indent, depth);
    out += '}';
    return;
  }
}

std::string Json::dump(int indent) const {
  std::string out;
  dumpTo(out, indent, 0);
  return out;
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

class JsonParser {
public:
  JsonParser(std::string_view text, std::string_view sourceName)
      : text_(text), source_(sourceName) {}

  Json parseDocument() {
    Json value = parseValue(0);
    skipWhitespace();
    if (pos_ != text_.size())
      fail("expected end of input after the value, got " + describe(pos_));
    return value;
  }

private:
  // Deep enough for any manifest, shallow enough that hostile input cannot
  // overflow the stack.
  static constexpr int kMaxDepth = 512;

  [[noreturn]] void fail(const std::string &what) { failAt(pos_, what); }

  [[noreturn]] void failAt(size_t at, const std::string &what) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string msg;
    if (!source_.empty())
      msg += std::string(source_) + ": ";
    msg += "line " + std::to_string(line) + ", column " +
           std::to_string(column) + ": " + what;
    throw RuntimeError(msg);
  }

  /// What the input holds at `at`, for "got ..." in messages.
  std::string describe(size_t at) const {
    if (at >= text_.size())
      return "end of input";
    unsigned char c = static_cast<unsigned char>(text_[at]);
    if (c >= 0x20 && c < 0x7f)
      return std::string("'") + static_cast<char>(c) + "'";
    char buf[16];
    std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
    return buf;
  }

  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }

  void skipWhitespace() {
    while (!atEnd()) {
      char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
        return;
      ++pos_;
    }
  }

  void expect(char c, const char *what) {
    skipWhitespace();
    if (peek() != c || atEnd())
      fail(std::string("expected ") + what + ", got " + describe(pos_));
    ++pos_;
  }

  Json parseValue(int depth) {
    skipWhitespace();
    if (atEnd())
      fail("expected a value, got end of input");
    char c = text_[pos_];
    switch (c) {
    case '{':
      return parseObject(depth + 1);
    case '[':
      return parseArray(depth + 1);
    case '"': {
      Json v;
      v.kind_ = Json::Kind::String;
      v.string_ = parseString();
      return v;
    }
    case 't':
      parseLiteral("true");
      return Json(true);
    case 'f':
      parseLiteral("false");
      return Json(false);
    case 'n':
      parseLiteral("null");
      return Json();
    default:
      if (c == '-' || (c >= '0' && c <= '9'))
        return parseNumber();
      fail("expected a value, got " + describe(pos_));
    }
  }

  void parseLiteral(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      fail("expected '" + std::string(word) + "'");
    pos_ += word.size();
  }

  Json parseObject(int depth) {
    if (depth > kMaxDepth)
      fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    ++pos_; // '{'
    Json obj = Json::object();
    skipWhitespace();
    if (peek() == '}' && !atEnd()) {
      ++pos_;
      return obj;
    }
    std::unordered_set<std::string> seen;
    while (true) {
      skipWhitespace();
      if (peek() != '"' || atEnd())
        fail(obj.object_.empty()
                 ? "expected a string key or '}', got " + describe(pos_)
                 : "expected a string key, got " + describe(pos_));
      size_t keyPos = pos_;
      std::string key = parseString();
      if (!seen.insert(key).second)
        failAt(keyPos, "duplicate key \"" + key + "\"");
      expect(':', "':' after an object key");
      Json value = parseValue(depth);
      obj.object_.emplace_back(std::move(key), std::move(value));
      skipWhitespace();
      if (peek() == ',' && !atEnd()) {
        ++pos_;
        continue;
      }
      if (peek() == '}' && !atEnd()) {
        ++pos_;
        return obj;
      }
      fail("expected ',' or '}' after an object member, got " + describe(pos_));
    }
  }

  Json parseArray(int depth) {
    if (depth > kMaxDepth)
      fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    ++pos_; // '['
    Json arr = Json::array();
    skipWhitespace();
    if (peek() == ']' && !atEnd()) {
      ++pos_;
      return arr;
    }
    while (true) {
      arr.array_.push_back(parseValue(depth));
      skipWhitespace();
      if (peek() == ',' && !atEnd()) {
        ++pos_;
        continue;
      }
      if (peek() == ']' && !atEnd()) {
        ++pos_;
        return arr;
      }
      fail("expected ',' or ']' after an array element, got " + describe(pos_));
    }
  }

  static void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  uint32_t parseHex4() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = peek();
      uint32_t d;
      if (atEnd())
        fail("expected 4 hex digits after \\u, got end of input");
      if (c >= '0' && c <= '9')
        d = static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        d = static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        d = static_cast<uint32_t>(c - 'A' + 10);
      else
        fail("expected 4 hex digits after \\u, got " + describe(pos_));
      v = v * 16 + d;
      ++pos_;
    }
    return v;
  }

  /// Length of the valid UTF-8 sequence at pos_ (lead byte >= 0x80), or 0.
  size_t utf8SequenceLength() const {
    auto byte = [&](size_t k) -> unsigned {
      return pos_ + k < text_.size()
                 ? static_cast<unsigned char>(text_[pos_ + k])
                 : 0u;
    };
    auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) {
      unsigned b = byte(k);
      return b >= lo && b <= hi;
    };
    unsigned b0 = byte(0);
    if (b0 >= 0xC2 && b0 <= 0xDF)
      return cont(1) ? 2 : 0;
    if (b0 >= 0xE0 && b0 <= 0xEF) {
      // No overlong forms (E0) and no UTF-16 surrogates (ED).
      unsigned lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;
      return cont(1, lo, hi) && cont(2) ? 3 : 0;
    }
    if (b0 >= 0xF0 && b0 <= 0xF4) {
      unsigned lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;
      return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
    }
    return 0;
  }

  std::string parseString() {
    size_t start = pos_;
    ++pos_; // opening quote
    std::string out;
    while (true) {
      if (atEnd())
        failAt(start, "unterminated string");
      unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20)
        fail("expected a string character, got control character " +
             describe(pos_) + " (escape it)");
      if (c >= 0x80) {
        size_t n = utf8SequenceLength();
        if (n == 0)
          fail("expected UTF-8 in a string, got invalid " + describe(pos_));
        out.append(text_.substr(pos_, n));
        pos_ += n;
        continue;
      }
      if (c != '\\') {
        out += static_cast<char>(c);
        ++pos_;
        continue;
      }
      ++pos_; // backslash
      if (atEnd())
        failAt(start, "unterminated string");
      char e = text_[pos_++];
      switch (e) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        size_t escPos = pos_ - 2;
        uint32_t cp = parseHex4();
        if (cp >= 0xDC00 && cp <= 0xDFFF)
          failAt(escPos, "expected a high surrogate before a low surrogate "
                         "in a \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (text_.substr(pos_, 2) != "\\u")
            failAt(escPos, "expected a \\u low surrogate after a high "
                           "surrogate");
          pos_ += 2;
          uint32_t lo = parseHex4();
          if (lo < 0xDC00 || lo > 0xDFFF)
            failAt(pos_ - 6, "expected a low surrogate (\\udc00-\\udfff)");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        failAt(pos_ - 1, "expected an escape character (one of \"\\/bfnrtu), "
                         "got " +
                             describe(pos_ - 1));
      }
    }
  }

  Json parseNumber() {
    size_t start = pos_;
    auto digits = [&]() {
      size_t n = 0;
      while (!atEnd() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        ++pos_;
        ++n;
      }
      return n;
    };
    if (peek() == '-')
      ++pos_;
    if (atEnd() || text_[pos_] < '0' || text_[pos_] > '9')
      fail("expected a digit, got " + describe(pos_));
    if (text_[pos_] == '0') {
      ++pos_;
      if (!atEnd() && text_[pos_] >= '0' && text_[pos_] <= '9')
        fail("expected '.', 'e' or the end of the number after a leading 0 "
             "(no leading zeros)");
    } else {
      digits();
    }
    bool integral = true;
    if (peek() == '.' && !atEnd()) {
      ++pos_;
      integral = false;
      if (digits() == 0)
        fail("expected a digit after '.', got " + describe(pos_));
    }
    if ((peek() == 'e' || peek() == 'E') && !atEnd()) {
      ++pos_;
      integral = false;
      if (peek() == '+' || peek() == '-')
        ++pos_;
      if (digits() == 0)
        fail("expected a digit in the exponent, got " + describe(pos_));
    }
    const char *first = text_.data() + start;
    const char *last = text_.data() + pos_;
    Json v;
    v.kind_ = Json::Kind::Number;
    if (integral) {
      int64_t i;
      auto res = std::from_chars(first, last, i);
      if (res.ec == std::errc() && res.ptr == last) {
        v.exactInt_ = true;
        v.int_ = i;
        v.number_ = static_cast<double>(i);
        return v;
      }
      // Beyond int64: fall through to a (rounded) double.
    }
    auto res = std::from_chars(first, last, v.number_);
    if (res.ec != std::errc() || res.ptr != last)
      failAt(start, "number " + std::string(first, last) +
                        " is out of the range of a double");
    return v;
  }

  std::string_view text_;
  std::string_view source_;
  size_t pos_ = 0;
};

Json Json::parse(std::string_view text, std::string_view sourceName) {
  return JsonParser(text, sourceName).parseDocument();
}

Json loadJsonFile(const std::string &path) {
  std::string text = readFile(path);
  return Json::parse(text, path);
}

} // namespace fbt
