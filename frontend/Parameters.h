//===- Parameters.h - a spec's parameter tensors ----------------*- C++ -*-===//
//
// The model's parameters, by name and shape, in the order every step
// function takes them: the one list the model builder, --describe and the
// bundle's manifest go by. No MLIR, so the spec fuzzer has it too.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_FRONTEND_PARAMETERS_H
#define FBT_FRONTEND_PARAMETERS_H

#include "frontend/Spec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fbt {

struct ParameterInfo {
  std::string name;            // HF Llama name, or feedback.* for the FBT path
  std::vector<int64_t> shape;
  bool feedback = false;       // belongs to the feedback path
  bool decay = true;           // AdamW weight decay applies (not to norms, embedding)
};

/// The model's parameters, in the order every step function takes them.
std::vector<ParameterInfo> parameterList(const ModelSpec &spec);

} // namespace fbt

#endif // FBT_FRONTEND_PARAMETERS_H
