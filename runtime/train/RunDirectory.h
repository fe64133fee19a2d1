//===- RunDirectory.h - the files of a training run ---------------*- C++ -*-===//
//
// A run directory (`fbt train --out DIR`) holds run.json (the settings, the
// tokenizer), metrics.jsonl (one record per step and evaluation),
// latest.safetensors and the step-N checkpoints. These are the operations on
// it that resuming needs: finding the checkpoint and what its run recorded,
// cutting the metrics back to the checkpoint's step, and clearing the temp
// files of saves that a kill interrupted.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TRAIN_RUNDIRECTORY_H
#define FBT_RUNTIME_TRAIN_RUNDIRECTORY_H

#include "runtime/base/Json.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fbt {

std::string joinPath(const std::string &dir, const std::string &name);

/// `--resume PATH`: the checkpoint itself, or a run directory's latest.
std::string checkpointToResume(const std::string &path);
/// The directory holding `file` ("." for a bare name).
std::string directoryOf(const std::string &file);

/// Removes the "<file>.tmp.<pid>" files of run.json, metrics.jsonl and the
/// checkpoints in `dir` whose process is gone.
void removeStaleTempFiles(const std::string &dir);

/// Cuts metrics.jsonl at `path` back to the records of steps <= `step` and
/// returns them.
std::vector<Json> keepMetricsThrough(const std::string &path, int64_t step);

/// What `--resume` points at: the checkpoint, its directory, its metadata
/// and the settings its run recorded (null without run.json). All empty for
/// a fresh run.
struct ResumePoint {
  std::string checkpoint, directory;
  std::map<std::string, std::string> metadata;
  Json recorded;
};
/// Throws when the checkpoint is missing or belongs to another `model`.
ResumePoint findResumePoint(const std::string &resume, const std::string &model);

} // namespace fbt

#endif // FBT_RUNTIME_TRAIN_RUNDIRECTORY_H
