//===- PromptTokens.cpp - the prompts file of fbt score and fbt states ----===//

#include "PromptTokens.h"

#include "runtime/base/Error.h"
#include "runtime/base/TokenIds.h"
#include "runtime/format/Safetensors.h"

namespace fbt {

PromptTokens readPromptTokens(const std::string &path, int64_t vocab) {
  SafetensorsFile file = readSafetensors(path);
  const Tensor &ids = file.at("input_ids");
  const Tensor &lengths = file.at("prompt_lengths");
  if (ids.dtype != DType::I32 || ids.shape.size() != 2 || lengths.dtype != DType::I32 ||
      lengths.shape != std::vector<int64_t>{ids.shape[0]})
    throw RuntimeError(path + ": expected input_ids I32 [N, T] and prompt_lengths I32 [N]");
  requireTokenIds(ids.data<int32_t>(), ids.shape[0] * ids.shape[1], ids.shape[1], vocab, false,
                  path + ": input_ids");
  PromptTokens p;
  int64_t n = ids.shape[0];
  p.width = ids.shape[1];
  for (int64_t r = 0; r < n; ++r) {
    const int32_t *row = ids.data<int32_t>() + r * p.width;
    p.rows.emplace_back(row, row + p.width);
    int64_t len = lengths.data<int32_t>()[r];
    if (len < 1 || len > p.width)
      throw RuntimeError(path + ": prompt_lengths[" + std::to_string(r) + "] is " +
                         std::to_string(len) + ", not in [1, " + std::to_string(p.width) +
                         "]");
    p.lengths.push_back(len);
  }
  return p;
}

} // namespace fbt
