//===- BundleWriter.h - the .fbtb bundle format ------------------*- C++ -*-===//
//
// A bundle is everything the runtime needs to run a model's steps:
//
//   bytes 0..7    magic "FBTBNDL1"
//   bytes 8..15   manifest length M (u64, little endian)
//   bytes 16..23  FNV-1a 64 of the manifest
//   bytes 24..    the manifest, JSON (M bytes), then zero padding to 64
//   then          the blobs, each at a 64-byte aligned offset from the
//                 start of the blob area, with size and FNV-1a 64 listed in
//                 the manifest
//
// The manifest says what was compiled (`model`: the resolved spec;
// `params`: names, shapes, decay), for what (`target`), and how to run each
// step (`steps`: the plans of StepPlan.h, by name). The format version is
// in the magic; a reader refuses others.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_CODEGEN_BUNDLEWRITER_H
#define FBT_CODEGEN_BUNDLEWRITER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <utility>
#include <vector>

namespace mlir::fbt {

constexpr char kBundleMagic[8] = {'F', 'B', 'T', 'B', 'N', 'D', 'L', '1'};

uint64_t fnv1a64(llvm::StringRef bytes);

/// Writes the bundle atomically (temp file + rename): a failed write leaves
/// no partial file. `blobs` are (name, bytes); their table is added to the
/// manifest under "blobs".
llvm::Error writeBundle(llvm::StringRef path, llvm::json::Object manifest,
                        const std::vector<std::pair<std::string, std::string>> &blobs);

} // namespace mlir::fbt

#endif // FBT_CODEGEN_BUNDLEWRITER_H
