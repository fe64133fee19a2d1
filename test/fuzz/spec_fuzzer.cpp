//===- spec_fuzzer.cpp - libFuzzer target for the spec reader -------------===//
//
// Any byte string must give either a spec whose figures can be computed and
// printed, or exactly one error line naming the source. Crashes, sanitizer
// reports and leaks are what the fuzzer finds; the checks below turn a
// broken message contract into a crash it can find too.
//
//===----------------------------------------------------------------------===//

#include "frontend/LoadSpec.h"
#include "frontend/Describe.h"
#include "frontend/Spec.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<fbt::ModelSpec> spec = fbt::parseSpec(text, "fuzz.json");
  if (!spec) {
    std::string message = llvm::toString(spec.takeError());
    llvm::StringRef m(message);
    if (!m.starts_with("fuzz.json") || m.contains('\n') ||
        !llvm::json::isUTF8(m))
      std::abort();
    return 0;
  }
  // parseSpec promises the figures fit in 64 bits; describe() would
  // report_fatal_error (and so crash here) if that were wrong.
  fbt::Description d = fbt::describe(*spec);
  std::string out;
  llvm::raw_string_ostream os(out);
  fbt::printDescription(*spec, d, os);
  fbt::printDescriptionJson(*spec, d, os);
  return 0;
}
