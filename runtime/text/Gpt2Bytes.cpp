//===- Gpt2Bytes.cpp - GPT-2's printable stand-in for each byte -----------===//

#include "runtime/text/Gpt2Bytes.h"

namespace fbt::gpt2 {

namespace {
bool printable(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}
} // namespace

uint32_t codePointOfByte(uint8_t b) {
  if (printable(b))
    return b;
  uint32_t before = 0; // the non-printable bytes below b
  for (int c = 0; c < b; ++c)
    before += !printable(c);
  return 256 + before;
}

std::vector<int> byteOfCodePoint() {
  std::vector<int> byteOf(512, -1);
  for (int b = 0; b < 256; ++b)
    byteOf[codePointOfByte(uint8_t(b))] = b;
  return byteOf;
}

std::vector<std::string> byteSymbols() {
  std::vector<std::string> symbols(256);
  for (int b = 0; b < 256; ++b) {
    uint32_t cp = codePointOfByte(uint8_t(b));
    std::string &s = symbols[b];
    if (cp < 0x80) {
      s += char(cp);
    } else { // every stand-in is below U+0800: two bytes
      s += char(0xC0 | (cp >> 6));
      s += char(0x80 | (cp & 0x3F));
    }
  }
  return symbols;
}

} // namespace fbt::gpt2
