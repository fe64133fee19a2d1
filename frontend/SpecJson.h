//===- SpecJson.h - a resolved spec as JSON ---------------------*- C++ -*-===//
//
// The spec with every default resolved, in the input's own keys: what a
// bundle records so the runtime knows the model, schedule and optimizer it
// was compiled for. It is itself a spec: parsing it gives back the same
// resolved spec (SpecJsonTest), so a bundle's model can be compiled again.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_FRONTEND_SPECJSON_H
#define FBT_FRONTEND_SPECJSON_H

#include "frontend/Spec.h"

#include "llvm/Support/JSON.h"

namespace fbt {
llvm::json::Value specToJson(const ModelSpec &spec);
} // namespace fbt

#endif // FBT_FRONTEND_SPECJSON_H
