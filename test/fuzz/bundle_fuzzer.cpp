//===- bundle_fuzzer.cpp - libFuzzer target for the bundle loader --------===//
//
// Any file must load as a bundle whose plans the loader has checked, or give
// one fbt::RuntimeError with a message; any other exception, a crash or a
// sanitizer report is a bug. A bundle that loads is walked as the runtime
// walks it (every step's plan, every kernel's launches).
//
// An input that starts with the container's magic is loaded as it is (the
// container's own checks). Any other input is taken as a manifest: it is
// wrapped in a container with a valid checksum and small stand-in blobs, and
// the text @BLOBS@ in it becomes their table, so mutations reach the
// manifest's readers instead of stopping at the checksum
// (bundle_seeds.py makes such manifests from real bundles).
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"

#include "runtime/base/Error.h"
#include "runtime/base/Hash.h"
#include "runtime/format/Bundle.h"

#include <cinttypes>

using namespace fbt;

namespace {
std::string u64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i)
    s[i] = (char)(v >> (8 * i));
  return s;
}

/// `manifest` in a container, with the stand-in blobs its @BLOBS@ names.
std::string wrap(std::string manifest) {
  static const std::pair<const char *, std::string> kBlobs[] = {
      {"kernels.so", "\x7f" "ELF stand-in"},
      {"kernels.ptx", ".version 8.0\n.target sm_90\n.address_size 64\n"},
      {"kernels.cubin", "cubin stand-in"}};
  std::string table = "{", area;
  for (const auto &[name, bytes] : kBlobs) {
    area.resize((area.size() + 63) / 64 * 64, '\0');
    char entry[160];
    std::snprintf(entry, sizeof(entry),
                  "%s\"%s\":{\"offset\":%zu,\"size\":%zu,\"fnv1a64\":\"%016" PRIx64 "\"}",
                  table.size() > 1 ? "," : "", name, area.size(), bytes.size(),
                  fnv1a64(bytes.data(), bytes.size()));
    table += entry;
    area += bytes;
  }
  table += "}";
  for (size_t at; (at = manifest.find("@BLOBS@")) != std::string::npos;)
    manifest.replace(at, 7, table);
  // The container by hand: the manifest is raw text that need not parse.
  std::string file = std::string(kBundleMagic, sizeof kBundleMagic) + u64(manifest.size()) +
                     u64(fnv1a64(manifest.data(), manifest.size())) + manifest;
  file.resize((file.size() + 63) / 64 * 64, '\0');
  return file + area;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string input(reinterpret_cast<const char *>(data), size);
  if (input.rfind("FBTB", 0) != 0)
    input = wrap(std::move(input));
  std::string path =
      fuzz::asFile(reinterpret_cast<const uint8_t *>(input.data()), input.size(), ".fbtb");
  try {
    Bundle b = Bundle::load(path);
    for (const auto &[name, p] : b.steps()) {
      (void)p.inputIndex("input_ids");
      (void)p.outputIndex("logits");
      (void)b.step(name);
    }
    (void)b.parameterCount();
    if (b.target().gpu() || b.target().emulated())
      for (const std::string &k : b.kernels())
        (void)b.launches(k);
  } catch (const RuntimeError &e) {
    if (!*e.what())
      std::abort();
  }
  return 0;
}
