//===- HeldOutData.h - a run's data, cut into the parts it cut --*- C++ -*-===//
//
// What the commands that measure a trained model read (fbt eval, fbt probe,
// the Python module's Session.held_out): the data as its run read it (the
// embedded corpus, or a file through the run's tokenizer; .bin files as
// token ids), cut into train / validation / test at the fractions its run
// recorded (run.json beside the checkpoint), unless given.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TRAIN_HELDOUTDATA_H
#define FBT_RUNTIME_TRAIN_HELDOUTDATA_H

#include "runtime/session/Session.h"
#include "runtime/text/DataSplits.h"
#include "runtime/text/TokenStream.h"

#include <optional>
#include <string>

namespace fbt {

struct HeldOutOptions {
  std::string data; ///< "" for the embedded corpus
  std::string ckpt; ///< its run's run.json gives the fractions; "" for none
  std::optional<double> valFraction, testFraction; ///< instead of the run's
};

struct HeldOutData {
  TokenStream tokens;
  DataSplits splits;
  bool ids = false;       ///< token ids (.bin), not text
  bool byteLevel = false; ///< one token per byte: bits per byte are known
};

/// The data and its parts; RuntimeError for fractions given with the
/// embedded corpus (which has its own parts), or a corpus the run's
/// tokenizer cannot read.
HeldOutData loadHeldOutData(Session &session, const HeldOutOptions &options);

} // namespace fbt

#endif // FBT_RUNTIME_TRAIN_HELDOUTDATA_H
