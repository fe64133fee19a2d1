//===- safetensors_fuzzer.cpp - libFuzzer target for checkpoints ---------===//
//
// Any file image must parse as a checkpoint or give one fbt::RuntimeError
// with a message; anything else is a bug. What parses must survive the
// writer: written back (atomically, as fbt train writes checkpoints) and
// read again, it holds the same tensors, bytes and metadata. Floating
// tensors widen to f32 without error.
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"

#include "runtime/base/Error.h"
#include "runtime/format/Safetensors.h"

using namespace fbt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  SafetensorsFile f;
  try {
    f = parseSafetensors(std::string_view(reinterpret_cast<const char *>(data), size),
                         "fuzz.safetensors");
  } catch (const RuntimeError &e) {
    if (!*e.what())
      std::abort();
    return 0;
  }
  for (const Tensor &t : f.tensors)
    if (t.dtype == DType::F32 || t.dtype == DType::BF16 || t.dtype == DType::F16)
      if ((int64_t)t.toF32().size() != t.numElements())
        std::abort();
  std::string path = fuzz::asFile(nullptr, 0, ".safetensors");
  writeSafetensorsAtomic(path, f.tensors, f.metadata); // throws: a bug too
  SafetensorsFile again = readSafetensors(path);
  if (again.tensors.size() != f.tensors.size() || again.metadata != f.metadata)
    std::abort();
  for (const Tensor &t : f.tensors) {
    const Tensor *u = again.find(t.name);
    if (!u || u->dtype != t.dtype || u->shape != t.shape || u->bytes != t.bytes)
      std::abort();
  }
  return 0;
}
