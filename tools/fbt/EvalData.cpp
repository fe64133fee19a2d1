//===- EvalData.cpp - the held-out data fbt eval and fbt probe read -------===//

#include "EvalData.h"

namespace fbt {

HeldOutData loadEvalData(const CommandLine &args, Session &session) {
  HeldOutOptions o;
  o.data = args.get("data");
  o.ckpt = args.get("ckpt");
  if (args.has("val-fraction"))
    o.valFraction = args.getDouble("val-fraction", 0.1);
  if (args.has("test-fraction"))
    o.testFraction = args.getDouble("test-fraction", 0.1);
  return loadHeldOutData(session, o);
}

} // namespace fbt
