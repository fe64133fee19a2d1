//===- FaultInjection.cpp - the runtime's one test seam -------------------===//

#include "runtime/base/FaultInjection.h"

#include "runtime/base/Error.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace fbt::fault {

namespace {
/// FBT_FAULT parsed once: which fault, and its arguments.
struct Fault {
  enum class Kind { None, KillRank, StopSave } kind = Kind::None;
  long long rank = -1, step = -1;
  std::string point;
};

const Fault &fault() {
  static const Fault parsed = [] {
    Fault f;
    const char *value = std::getenv(kVariable);
    if (!value)
      return f;
    char tail = 0;
    std::string text = value;
    if (std::sscanf(value, "kill-rank:%lld:%lld%c", &f.rank, &f.step, &tail) == 2) {
      f.kind = Fault::Kind::KillRank;
    } else if (text.rfind("stop-save:", 0) == 0) {
      f.kind = Fault::Kind::StopSave;
      f.point = text.substr(std::strlen("stop-save:"));
      if (f.point != "write" && f.point != "fsync" && f.point != "rename" &&
          f.point != "directory")
        f.kind = Fault::Kind::None;
    }
    if (f.kind == Fault::Kind::None)
      throw RuntimeError(std::string(kVariable) + "='" + text +
                         "': expected kill-rank:RANK:STEP or "
                         "stop-save:write|fsync|rename|directory");
    return f;
  }();
  return parsed;
}
} // namespace

void atStep(int rank, int64_t step) {
  const Fault &f = fault();
  if (f.kind == Fault::Kind::KillRank && f.rank == rank && f.step == step)
    ::raise(SIGKILL);
}

void inSave(const char *point, bool replacing) {
  const Fault &f = fault();
  if (replacing && f.kind == Fault::Kind::StopSave && f.point == point)
    ::raise(SIGSTOP);
}

} // namespace fbt::fault
