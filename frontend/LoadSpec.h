//===- LoadSpec.h - A spec read whole: fields, then figures -----*- C++ -*-===//
//
// What every reader of a spec file calls: readSpec's fields and consistency
// (Spec.h), then the figures `describe` computes (Describe.h), which must fit
// in 64 bits, so that no later stage has to check its arithmetic. Spec and
// Describe know nothing of each other's callers; this is the one place both
// meet.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_FRONTEND_LOADSPEC_H
#define FBT_FRONTEND_LOADSPEC_H

#include "frontend/Spec.h"

namespace fbt {

/// Parses and validates a spec, its figures included. Errors are readSpec's,
/// or "<source>: <field>: expected ..., got ..." naming the field that makes
/// a figure overflow.
llvm::Expected<ModelSpec> parseSpec(llvm::StringRef json, llvm::StringRef sourceName,
                                    std::optional<Recipe> recipe = std::nullopt);

/// Reads a file and parses it; a missing, empty or binary file is an error.
llvm::Expected<ModelSpec> loadSpec(llvm::StringRef path,
                                   std::optional<Recipe> recipe = std::nullopt);

} // namespace fbt

#endif // FBT_FRONTEND_LOADSPEC_H
