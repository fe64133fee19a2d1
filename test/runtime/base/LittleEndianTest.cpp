//===- LittleEndianTest.cpp - integers as files hold them -----------------===//

#include "runtime/base/LittleEndian.h"

#include <gtest/gtest.h>

#include <cstdint>

using namespace fbt;

namespace {

TEST(LittleEndianTest, LeastSignificantByteFirst) {
  std::string out;
  appendLittleEndian<uint32_t>(out, 0x0A0B0C0Du);
  appendLittleEndian<int16_t>(out, -2);
  EXPECT_EQ(out, std::string("\x0D\x0C\x0B\x0A\xFE\xFF", 6));
  EXPECT_EQ(readLittleEndian<uint32_t>(out.data()), 0x0A0B0C0Du);
  EXPECT_EQ(readLittleEndian<int16_t>(out.data() + 4), -2);
}

TEST(LittleEndianTest, SixtyFourBitsRoundTrip) {
  std::string out;
  uint64_t v = 0x8877665544332211ull;
  appendLittleEndian(out, v);
  ASSERT_EQ(out.size(), 8u);
  EXPECT_EQ((unsigned char)out[0], 0x11);
  EXPECT_EQ((unsigned char)out[7], 0x88);
  EXPECT_EQ(readLittleEndian<uint64_t>(out.data()), v);
}

} // namespace
