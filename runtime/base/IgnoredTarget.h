//===- IgnoredTarget.h - the target the compiled losses skip ------*- C++ -*-===//
//
// A position whose next token is not trained on (a prompt or user token of
// instruction data) has this target: the compiled losses (fbt.ntp_loss's
// ignore_index) leave it out of every pass's loss, its gradient and the
// count they divide by. One definition for the compiler
// (frontend/ModelBuilder.cpp), the data pipeline (text/TokenStream.h) and
// the PyTorch reference (ignore_index=-1).
//
// Header-only and dependency-free, so the compiler can include it.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_BASE_IGNOREDTARGET_H
#define FBT_RUNTIME_BASE_IGNOREDTARGET_H

#include <cstdint>

namespace fbt {

constexpr int32_t kIgnoredTarget = -1;

} // namespace fbt

#endif // FBT_RUNTIME_BASE_IGNOREDTARGET_H
