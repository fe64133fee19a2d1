//===- RunDirectory.cpp - the files of a training run ----------------------===//

#include "runtime/train/RunDirectory.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/format/Safetensors.h"

#include <cerrno>
#include <filesystem>

#include <signal.h>

namespace fbt {

namespace fs = std::filesystem;

std::string joinPath(const std::string &dir, const std::string &name) {
  return (fs::path(dir) / name).string();
}

/// `--resume PATH`: the checkpoint itself, or a run directory's latest.
std::string checkpointToResume(const std::string &path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::string latest = joinPath(path, "latest.safetensors");
    if (!fs::exists(latest, ec))
      throw RuntimeError(path + ": no latest.safetensors to resume from");
    return latest;
  }
  if (!fs::exists(path, ec))
    throw RuntimeError(path + ": no such checkpoint or run directory");
  return path;
}

std::string directoryOf(const std::string &file) {
  fs::path parent = fs::path(file).parent_path();
  return parent.empty() ? "." : parent.string();
}

/// A kill -9 during a save leaves "<file>.tmp.<pid>" behind (FileIO.h). The
/// checkpoint itself is intact; remove the debris of processes that are
/// gone so it does not pile up (a large model's temp file is gigabytes).
void removeStaleTempFiles(const std::string &dir) {
  std::error_code ec;
  for (const fs::directory_entry &entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    size_t tmp = name.rfind(".tmp.");
    if (tmp == std::string::npos)
      continue;
    std::string base = name.substr(0, tmp), pid = name.substr(tmp + 5);
    bool ours = base == "run.json" || base == "metrics.jsonl" ||
                (base.size() > 12 &&
                 base.compare(base.size() - 12, 12, ".safetensors") == 0);
    if (!ours || pid.empty() || pid.size() > 9 ||
        pid.find_first_not_of("0123456789") != std::string::npos)
      continue;
    if (::kill(std::stoi(pid), 0) != 0 && errno == ESRCH)
      fs::remove(entry.path(), ec);
  }
}

/// Cuts metrics.jsonl back to the records of steps <= `step` and returns
/// them. Records after `step` were logged by a run killed before its next
/// checkpoint; the resumed run logs those steps again (identically), so
/// keeping them would duplicate them. A line cut short by the kill does not
/// parse and goes too.
std::vector<Json> keepMetricsThrough(const std::string &path, int64_t step) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return {};
  std::string text = readFile(path);
  std::string keptText;
  std::vector<Json> kept;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    try {
      Json record = parseJson(line);
      const Json *s = jsonFind(record, "step");
      if (!s || !isInteger(*s) || asInt(*s) > step)
        continue;
      kept.push_back(std::move(record));
      keptText.append(line).push_back('\n');
    } catch (const RuntimeError &) { // a partial line
    }
  }
  writeFileAtomic(path, {keptText});
  return kept;
}

ResumePoint findResumePoint(const std::string &resume,
                            const std::string &model) {
  ResumePoint from;
  if (resume.empty())
    return from;
  from.checkpoint = checkpointToResume(resume);
  try { // the header alone (a checkpoint can be gigabytes)
    from.metadata = readSafetensorsHeader(from.checkpoint).metadata;
  } catch (const RuntimeError &) {
    // Unreadable: Session::loadCheckpoint reports the problem properly.
  }
  auto owner = from.metadata.find("fbt.model");
  if (owner != from.metadata.end() && owner->second != model)
    throw RuntimeError(from.checkpoint + ": a checkpoint of the model '" +
                       owner->second + "', but the bundle's model is '" +
                       model + "'");
  from.directory = directoryOf(from.checkpoint);
  std::string runJson = joinPath(from.directory, "run.json");
  std::error_code ec;
  if (fs::exists(runJson, ec))
    from.recorded = loadJsonFile(runJson);
  return from;
}

} // namespace fbt
