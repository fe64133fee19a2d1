//===- BundleWriter.cpp - the .fbtb bundle format -------------------------===//

#include "codegen/BundleWriter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

uint64_t fbt::fnv1a64(llvm::StringRef bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

static void putU64(llvm::raw_ostream &os, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    os << char((v >> (8 * i)) & 0xff);
}

static uint64_t alignTo64(uint64_t v) { return (v + 63) & ~uint64_t(63); }

llvm::Error fbt::writeBundle(
    llvm::StringRef path, llvm::json::Object manifest,
    const std::vector<std::pair<std::string, std::string>> &blobs) {
  llvm::json::Object table;
  uint64_t offset = 0;
  for (const auto &[name, bytes] : blobs) {
    // Hex strings: JSON numbers lose integers past 2^53.
    table[name] = llvm::json::Object{
        {"offset", (int64_t)offset},
        {"size", (int64_t)bytes.size()},
        {"fnv1a64", llvm::utohexstr(fnv1a64(bytes), /*LowerCase=*/true)}};
    offset = alignTo64(offset + bytes.size());
  }
  manifest["blobs"] = std::move(table);
  std::string text;
  {
    llvm::raw_string_ostream os(text);
    os << llvm::json::Value(std::move(manifest));
  }

  return llvm::writeToOutput(path, [&](llvm::raw_ostream &os) -> llvm::Error {
    os.write(kBundleMagic, sizeof(kBundleMagic));
    putU64(os, text.size());
    putU64(os, fnv1a64(text));
    os << text;
    uint64_t header = 24 + text.size();
    os.indent(alignTo64(header) - header); // padding (spaces are fine here)
    uint64_t at = 0;
    for (const auto &blob : blobs) {
      os << blob.second;
      at += blob.second.size();
      uint64_t next = alignTo64(at);
      os.write_zeros(next - at);
      at = next;
    }
    return llvm::Error::success();
  });
}
