//===- EvalData.h - the held-out data fbt eval and fbt probe read --*- C++ -*-===//
//
// The data as its run read it (the embedded corpus, or --data through the
// run's tokenizer; .bin files as token ids), cut into the parts its run cut
// (run.json beside the checkpoint), for the commands that measure on a
// held-out part.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_TOOLS_FBT_EVALDATA_H
#define FBT_TOOLS_FBT_EVALDATA_H

#include "CommandLine.h"

#include "runtime/session/Session.h"
#include "runtime/text/DataSplits.h"
#include "runtime/text/TokenStream.h"

namespace fbt {

struct EvalData {
  TokenStream tokens;
  DataSplits splits;
  bool ids = false;       ///< token ids (.bin), not text
  bool byteLevel = false; ///< one token per byte: bits per byte are known
};

/// --data (default: the embedded corpus) and its parts, as the run of
/// --ckpt split it (or --val-fraction and --test-fraction).
EvalData loadEvalData(const CommandLine &args, Session &session);

} // namespace fbt

#endif // FBT_TOOLS_FBT_EVALDATA_H
