//===- CmdTrain.cpp - fbt train (placeholder until the trainer lands) -----===//

#include "Args.h"
#include "Commands.h"

#include "runtime/Error.h"

namespace fbt {
int runTrain(int argc, char **argv) {
  throw RuntimeError("fbt train is not built yet");
}
} // namespace fbt
