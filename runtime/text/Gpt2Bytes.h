//===- Gpt2Bytes.h - GPT-2's printable stand-in for each byte ----*- C++ -*-===//
//
// GPT-2's vocabulary files (and GGUF's "gpt2" tokenizer model) write each
// byte as a printable code point, its bytes_to_unicode table: the printable
// Latin-1 bytes stand for themselves, the other 68 (controls, space, DEL,
// NBSP, soft hyphen) for U+0100 onwards in byte order. One definition, for
// the tokenizer that reads such files and the exporter that writes them.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TEXT_GPT2BYTES_H
#define FBT_RUNTIME_TEXT_GPT2BYTES_H

#include <cstdint>
#include <string>
#include <vector>

namespace fbt::gpt2 {

/// The code point that stands for byte `b`.
uint32_t codePointOfByte(uint8_t b);

/// The inverse: indexed by code point (0 .. 511), the byte it stands for,
/// or -1 for a code point that stands for none.
std::vector<int> byteOfCodePoint();

/// The 256 stand-ins as UTF-8 strings, in byte order.
std::vector<std::string> byteSymbols();

} // namespace fbt::gpt2

#endif // FBT_RUNTIME_TEXT_GPT2BYTES_H
