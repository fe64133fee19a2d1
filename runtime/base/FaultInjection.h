//===- FaultInjection.h - the runtime's one test seam -------------*- C++ -*-===//
//
// The fault tests make the runtime fail where a machine would: a rank lost
// mid-run, a process killed inside a checkpoint's replacement. Those faults
// are injected here and nowhere else, and only when the variable FBT_FAULT
// names one; unset (every real run), each check is one cached pointer test.
//
//   FBT_FAULT=kill-rank:R:S     rank R SIGKILLs itself as step S starts
//                               (as the OOM killer or a lost machine would);
//                               test/e2e/data-parallel.test
//   FBT_FAULT=stop-save:POINT   a write that replaces an existing file stops
//                               the process (SIGSTOP) at POINT, so a test can
//                               kill it there: write (half the contents
//                               written), fsync (all written), rename
//                               (fsynced and closed), directory (renamed,
//                               before the directory's fsync); new files
//                               never stop. test/e2e/train-kill.test
//
// A value of another form is an error at the first check, so a misspelt
// fault never passes for a test that found nothing.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_BASE_FAULTINJECTION_H
#define FBT_RUNTIME_BASE_FAULTINJECTION_H

#include <cstdint>

namespace fbt::fault {

/// The variable that names the fault to inject.
constexpr const char kVariable[] = "FBT_FAULT";

/// kill-rank: SIGKILL when `rank` starts `step` and the fault names both.
void atStep(int rank, int64_t step);

/// stop-save: SIGSTOP at `point` of a write that replaces a file.
void inSave(const char *point, bool replacing);

} // namespace fbt::fault

#endif // FBT_RUNTIME_BASE_FAULTINJECTION_H
