//===- Checkpoint.cpp - a session's checkpoints and tokenizer --------------===//
//
// Session's files (Session.h): safetensors checkpoints with HF Llama names
// for the shared weights, `feedback.*` for the feedback path and the AdamW
// moments beside them; the step, seed and the run's tokenizer as metadata,
// so a checkpoint alone says how its text was tokenized.
//
//===----------------------------------------------------------------------===//

#include "runtime/session/Session.h"

#include "runtime/base/Error.h"
#include "runtime/format/InferenceFile.h"
#include "runtime/format/Safetensors.h"

#include <cmath>
#include <map>

namespace fbt {

void Session::saveCheckpoint(const std::string &path) {
  allocateMoments();
  Channel &ranks = channel();
  bool writer = ranks.rank() == 0;
  std::vector<Tensor> tensors;
  auto add = [&](const std::string &name, const ParamSpec &p, const DeviceBuffer &b) {
    Tensor t(name, DType::F32, p.shape);
    device_->download(t.bytes.data(), b.data(), t.bytes.size());
    tensors.push_back(std::move(t));
  };
  // A moment another rank keeps (ZeRO-1) comes from its owner, one tensor
  // at a time: every rank takes part, rank 0 keeps it.
  auto gathered = [&](const std::string &name, const ParamSpec &p, const DeviceBuffer &b) {
    Tensor t(name, DType::F32, p.shape);
    int owner = sync().owner(p.name);
    if (owner == ranks.rank())
      device_->download(t.bytes.data(), b.data(), t.bytes.size());
    ranks.broadcastHost(t.bytes.data(), t.bytes.size(), owner);
    if (writer)
      tensors.push_back(std::move(t));
  };
  for (size_t i = 0; i < bundle_.params().size(); ++i) {
    const ParamSpec &p = bundle_.params()[i];
    if (writer)
      add(p.name, p, state_.params[i]);
    for (auto [name, moments] : {std::pair{"optimizer.adam_m.", &state_.m},
                                 {"optimizer.adam_v.", &state_.v}}) {
      if (!shardsOptimizer() || ranks.size() == 1) {
        if (writer)
          add(name + p.name, p, (*moments)[i]);
      } else {
        gathered(name + p.name, p, (*moments)[i]);
      }
    }
  }
  if (!writer)
    return;
  std::map<std::string, std::string> meta = {
      {"format", "pt"},
      {"fbt.model", model_.name},
      {"fbt.step", std::to_string(state_.step)},
      {"fbt.seed", std::to_string(state_.seed)},
      {"fbt.tokenizer", tokenizerName_}};
  writeSafetensorsAtomic(path, tensors, meta);
}

void Session::setTokenizer(const std::string &name) {
  std::string canonical = canonicalTokenizerName(name);
  if (canonical != tokenizerName_)
    tokenizer_.reset();
  tokenizerName_ = canonical;
}

const Tokenizer &Session::tokenizer() {
  if (!tokenizer_) {
    std::unique_ptr<Tokenizer> t = loadTokenizer(tokenizerName_);
    int64_t vocab = model_.vocabSize;
    if (t->vocabSize() > vocab)
      throw RuntimeError("tokenizer '" + tokenizerName_ + "' has " +
                         std::to_string(t->vocabSize()) +
                         " tokens; the model's vocabulary holds " +
                         std::to_string(vocab));
    tokenizer_ = std::move(t);
  }
  return *tokenizer_;
}

/// A checkpoint tensor's values as the bundle's parameter `p` takes them.
std::vector<float> Session::checkpointValues(const std::string &path, const Tensor &t,
                                              const ParamSpec &p) {
  if (t.shape != p.shape)
    throw RuntimeError(path + ": tensor '" + t.name + "' has shape " +
                       shapeString(t.shape) + ", the bundle expects " +
                       shapeString(p.shape));
  std::vector<float> values = t.toF32();
  for (float x : values)
    if (!std::isfinite(x))
      throw RuntimeError(path + ": tensor '" + t.name + "' holds NaN or Inf");
  return values;
}

namespace {
bool isMoment(const std::string &name) { return name.rfind("optimizer.", 0) == 0; }
} // namespace

std::vector<std::string> Session::loadWeights(const std::string &path) {
  SafetensorsFile file =
      readSafetensorsSome(path, [](std::string_view name) { return !isMoment(std::string(name)); });
  // Every mismatch at once, so one attempt shows what the two models differ in.
  std::vector<std::string> wrongShape, unknown;
  for (const Tensor &t : file.tensors) {
    if (isMoment(t.name))
      continue;
    int64_t i = paramIndex(t.name);
    if (i < 0)
      unknown.push_back("'" + t.name + "'");
    else if (t.shape != bundle_.params()[i].shape)
      wrongShape.push_back("'" + t.name + "' " + shapeString(t.shape) + " (the bundle's " +
                           shapeString(bundle_.params()[i].shape) + ")");
  }
  auto list = [](const std::vector<std::string> &names) {
    std::string s;
    for (const std::string &n : names)
      s += (s.empty() ? "" : ", ") + n;
    return s;
  };
  if (!wrongShape.empty() || !unknown.empty()) {
    std::string why;
    if (!wrongShape.empty())
      why += "tensors of another shape: " + list(wrongShape);
    if (!unknown.empty())
      why += std::string(why.empty() ? "" : "; ") +
             "tensors the model '" + model_.name + "' has no parameter for: " + list(unknown);
    throw RuntimeError(path + ": cannot start from these weights: " + why);
  }
  std::vector<std::string> missing;
  for (size_t i = 0; i < bundle_.params().size(); ++i) {
    const ParamSpec &p = bundle_.params()[i];
    const Tensor *t = file.find(p.name);
    if (!t) {
      missing.push_back(p.name);
      continue;
    }
    std::vector<float> values = checkpointValues(path, *t, p);
    device_->upload(state_.params[i].data(), values.data(), state_.params[i].size());
  }
  parametersChanged();
  return missing;
}

void Session::loadCheckpoint(const std::string &path) {
  SafetensorsFile file = readSafetensors(path);
  if (std::optional<WeightForm> form = inference_file::formOf(file)) {
    loadInferenceWeights(file, *form);
    readCheckpointMetadata(file);
    return;
  }
  auto fill = [&](const std::string &name, const ParamSpec &p, DeviceBuffer &b,
                  bool required) {
    if (!b.size())
      return; // a moment another rank keeps (ZeRO-1)
    const Tensor *t = file.find(name);
    if (!t) {
      if (required)
        throw RuntimeError(path + ": missing tensor '" + name +
                           "' (does this checkpoint belong to this bundle?)");
      device_->zero(b.data(), b.size());
      return;
    }
    std::vector<float> values = checkpointValues(path, *t, p);
    device_->upload(b.data(), values.data(), b.size());
  };
  allocateMoments();
  for (size_t i = 0; i < bundle_.params().size(); ++i) {
    const ParamSpec &p = bundle_.params()[i];
    fill(p.name, p, state_.params[i], true);
    fill("optimizer.adam_m." + p.name, p, state_.m[i], false);
    fill("optimizer.adam_v." + p.name, p, state_.v[i], false);
  }
  parametersChanged();
  readCheckpointMetadata(file);
}

void Session::readCheckpointMetadata(const SafetensorsFile &file) {
  auto meta = [&](const char *key, int64_t fallback) -> int64_t {
    auto it = file.metadata.find(key);
    return it == file.metadata.end() ? fallback : std::stoll(it->second);
  };
  state_.step = meta("fbt.step", 0);
  state_.seed = (uint64_t)meta("fbt.seed", 0);
  if (auto t = file.metadata.find("fbt.tokenizer"); t != file.metadata.end())
    setTokenizer(t->second);
}

} // namespace fbt
