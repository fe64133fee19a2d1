//===- Gpt2BytesTest.cpp - GPT-2's stand-ins for the bytes ----------------===//

#include "runtime/text/Gpt2Bytes.h"

#include <gtest/gtest.h>

#include <set>

using namespace fbt;

namespace {

TEST(Gpt2BytesTest, TheTableOfBytesToUnicode) {
  EXPECT_EQ(gpt2::codePointOfByte('A'), uint32_t('A'));
  EXPECT_EQ(gpt2::codePointOfByte(0x00), 0x100u);  // the first non-printable
  EXPECT_EQ(gpt2::codePointOfByte('\n'), 0x10Au); // "Ċ"
  EXPECT_EQ(gpt2::codePointOfByte(' '), 0x120u);  // "Ġ"
  EXPECT_EQ(gpt2::codePointOfByte(0x7F), 0x121u); // DEL after the 33 controls and space
  EXPECT_EQ(gpt2::codePointOfByte(0xAD), 0x143u); // soft hyphen, the 68th and last
  EXPECT_EQ(gpt2::codePointOfByte(0xAE), 0xAEu);
}

TEST(Gpt2BytesTest, EveryByteHasItsOwnSymbolAndComesBack) {
  std::vector<std::string> symbols = gpt2::byteSymbols();
  ASSERT_EQ(symbols.size(), 256u);
  EXPECT_EQ(symbols[' '], "\xC4\xA0");
  EXPECT_EQ(std::set<std::string>(symbols.begin(), symbols.end()).size(), 256u);
  std::vector<int> byteOf = gpt2::byteOfCodePoint();
  int standIns = 0;
  for (int b = 0; b < 256; ++b)
    EXPECT_EQ(byteOf[gpt2::codePointOfByte(uint8_t(b))], b);
  for (int v : byteOf)
    standIns += v >= 0;
  EXPECT_EQ(standIns, 256);
}

} // namespace
