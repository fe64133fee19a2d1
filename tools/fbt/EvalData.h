//===- EvalData.h - the held-out data fbt eval and fbt probe read --*- C++ -*-===//
//
// --data, --val-fraction and --test-fraction beside --ckpt, as the runtime's
// held-out data (runtime/train/HeldOutData.h).
//
//===----------------------------------------------------------------------===//

#ifndef FBT_TOOLS_FBT_EVALDATA_H
#define FBT_TOOLS_FBT_EVALDATA_H

#include "CommandLine.h"

#include "runtime/session/Session.h"
#include "runtime/train/HeldOutData.h"

namespace fbt {

/// --data (default: the embedded corpus) and its parts, as the run of
/// --ckpt split it (or --val-fraction and --test-fraction).
HeldOutData loadEvalData(const CommandLine &args, Session &session);

} // namespace fbt

#endif // FBT_TOOLS_FBT_EVALDATA_H
