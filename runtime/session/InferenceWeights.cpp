//===- InferenceWeights.cpp - the parameters in their inference forms -----===//
//
// A bundle compiled with bf16 or int8 inference weights has inference steps
// that take each weight matrix in that form (runtime/format/WeightNames.h).
// The session makes those copies from the f32 parameters on the device
// when a step first binds one, and remakes them when the parameters change:
// training keeps the f32 master weights, and what it trained is what the
// next decode or evaluation reads, rounded.
//
//===----------------------------------------------------------------------===//

#include "runtime/base/Error.h"
#include "runtime/format/InferenceFile.h"
#include "runtime/format/QuantizedWeights.h"
#include "runtime/format/WeightNames.h"
#include "runtime/session/Session.h"

namespace fbt {

void *Session::inferenceWeight(const std::string &name) {
  std::optional<weights::WeightInput> w = weights::parseInput(name);
  if (!w)
    return nullptr;
  int64_t p = paramIndex(w->param);
  if (p < 0)
    return nullptr;
  const ParamSpec &spec = bundle_.params()[p];
  if (w->form != model_.inference.weights || spec.shape.size() != 2)
    throw RuntimeError("a step takes '" + name + "', but the bundle's inference weights are " +
                       kindName(model_.inference.weights) + " and '" + w->param +
                       "' is a " + std::to_string(spec.shape.size()) +
                       "-d parameter; recompile the bundle");
  InferenceCopy &copy = inferenceCopies_[size_t(p)];
  if (copy.version != paramsVersion_)
    makeInferenceWeight(size_t(p));
  return w->scales ? copy.scales.data() : copy.values.data();
}

void Session::makeInferenceWeight(size_t param) {
  const ParamSpec &spec = bundle_.params()[param];
  std::vector<float> values = parameter(param);
  installInferenceWeight(
      param, quantizeMatrix(model_.inference.weights, values.data(), spec.shape[0], spec.shape[1]));
}

void Session::installInferenceWeight(size_t param, const QuantizedMatrix &given) {
  const ParamSpec &spec = bundle_.params()[param];
  // The layout the bundle's kernels read (WeightNames.h); stored and
  // checkpointed copies keep the row layout.
  bool interleave = given.form == WeightForm::Int8 &&
                    bundle_.target().int8Layout == Int8Layout::Interleaved16;
  QuantizedMatrix interleaved;
  if (interleave)
    interleaved = interleaveRows(given);
  const QuantizedMatrix &q = interleave ? interleaved : given;
  InferenceCopy &copy = inferenceCopies_[param];
  auto put = [&](DeviceBuffer &buffer, bool scales, const char *what) {
    if (!buffer.size())
      buffer = DeviceBuffer(*device_, q.bytes(scales),
                            std::string(what) + " of '" + spec.name + "'");
    device_->upload(buffer.data(), q.data(scales), q.bytes(scales));
  };
  put(copy.values, false, "the inference weights");
  if (q.form == WeightForm::Int8)
    put(copy.scales, true, "the int8 scales");
  copy.version = paramsVersion_;
}

void Session::refreshInferenceWeights() {
  for (auto &[param, copy] : inferenceCopies_)
    if (copy.version != paramsVersion_)
      makeInferenceWeight(param);
}

} // namespace fbt
