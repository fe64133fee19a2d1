//===- CmdDevices.cpp - fbt devices: what this fbt can run on -------------===//
//
// Lists the backends built into this fbt and the GPUs it can use. The exit
// status says whether a GPU is usable (0) or not (1), so scripts and the
// test suite can ask before they run a GPU bundle.
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"

#include "runtime/hal/Device.h"

#include <cstdio>

namespace fbt {

int runDevices(int argc, char **argv) {
  CommandLine args("fbt devices",
                   "Lists the GPUs this fbt can run 'nvptx' bundles on, or why it\n"
                   "cannot. Exits 0 when a GPU is usable, 1 when not; --quiet\n"
                   "prints nothing.");
  args.flag("quiet", "print nothing; only the exit status");
  if (!args.parse(argc, argv))
    return 0;
  BundleTarget cpu; // kind cpu
  std::vector<std::string> gpus;
  bool usable = probeGpus(&gpus);
  if (args.has("quiet"))
    return usable ? 0 : 1;
  std::printf("cpu      %s\n", backendSummary(cpu).c_str());
  for (const std::string &g : gpus)
    std::printf("%s %s\n", usable ? "gpu     " : "no gpu  ", g.c_str());
  return usable ? 0 : 1;
}

} // namespace fbt
