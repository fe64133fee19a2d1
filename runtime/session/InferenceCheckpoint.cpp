//===- InferenceCheckpoint.cpp - a session's weights in their inference form, stored ===//
//
// fbt quantize writes a checkpoint's weights as the bundle's
// inference steps read them (runtime/format/InferenceFile.h); loadCheckpoint
// reads such a file back: each narrow matrix becomes the copy the steps
// bind as it is stored, not made again, and its parameter the values it
// stands for (what the embedding's lookup and anything else reading the
// f32 parameter then sees), unless the file stores it whole too.
//
//===----------------------------------------------------------------------===//

#include "runtime/base/Error.h"
#include "runtime/format/InferenceFile.h"
#include "runtime/format/QuantizedWeights.h"
#include "runtime/format/WeightNames.h"
#include "runtime/session/Session.h"

namespace fbt {

namespace {
bool isInference(StepKind kind) {
  return kind == StepKind::Eval || kind == StepKind::Prefill || kind == StepKind::Decode;
}

/// Whether an inference step of `bundle` takes the input `name`.
bool inferenceInput(const Bundle &bundle, const std::string &name) {
  for (const auto &[step, plan] : bundle.steps())
    if (isInference(plan.kind) && plan.inputIndex(name) >= 0)
      return true;
  return false;
}
} // namespace

void Session::saveInferenceWeights(const std::string &path) {
  WeightForm form = model_.inference.weights;
  if (form == WeightForm::F32)
    throw RuntimeError("the bundle's inference weights are f32: its steps read the "
                       "checkpoint itself (compile with fbtc --inference-weights=int8 "
                       "or bf16 for a narrow copy)");
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < bundle_.params().size(); ++i) {
    const ParamSpec &p = bundle_.params()[i];
    bool narrow = p.shape.size() == 2 &&
                  inferenceInput(bundle_, weights::inputsOf(form, p.name)[0]);
    std::vector<float> values = parameter(i);
    if (narrow) {
      QuantizedMatrix q = quantizeMatrix(form, values.data(), p.shape[0], p.shape[1]);
      for (Tensor &t : inference_file::tensorsOf(p.name, q))
        tensors.push_back(std::move(t));
    }
    // A matrix the steps read only narrow is stored so alone; the rest (and
    // a matrix also read whole, as the embedding's lookup reads it) as F32.
    if (!narrow || inferenceInput(bundle_, p.name))
      tensors.push_back(Tensor::fromF32(p.name, p.shape, values));
  }
  inference_file::write(path, form, tensors,
                        {{"format", "pt"},
                         {"fbt.model", model_.name},
                         {"fbt.step", std::to_string(state_.step)},
                         {"fbt.seed", std::to_string(state_.seed)},
                         {"fbt.tokenizer", tokenizerName_}});
}

void Session::loadInferenceWeights(const SafetensorsFile &file, WeightForm form) {
  if (form != model_.inference.weights)
    throw RuntimeError(file.source + ": holds " + kindName(form) +
                       " inference weights; the bundle's steps read " +
                       kindName(model_.inference.weights) +
                       " (compile it with fbtc --inference-weights=" + kindName(form) +
                       ", or load the f32 checkpoint)");
  inference_file::checkFingerprint(file);
  // Every tensor read and checked before any is loaded: a bad file leaves
  // the session as it was.
  std::map<size_t, QuantizedMatrix> narrow;
  std::vector<std::vector<float>> values(bundle_.params().size());
  for (size_t i = 0; i < bundle_.params().size(); ++i) {
    const ParamSpec &p = bundle_.params()[i];
    if (p.shape.size() == 2 && file.find(weights::inputsOf(form, p.name)[0]))
      narrow[i] = inference_file::readMatrix(file, form, p.name, p.shape[0], p.shape[1]);
    if (const Tensor *t = file.find(p.name))
      values[i] = checkpointValues(file.source, *t, p);
    else if (narrow.count(i)) // stored narrow alone: the values it stands for
      values[i] = dequantizeMatrix(narrow.at(i));
    else
      throw RuntimeError(file.source + ": missing tensor '" + p.name +
                         "' (does this file belong to this bundle?)");
  }
  allocateMoments();
  for (size_t i = 0; i < bundle_.params().size(); ++i) {
    device_->upload(state_.params[i].data(), values[i].data(), state_.params[i].size());
    for (DeviceBuffer *m : {&state_.m[i], &state_.v[i]})
      if (m->size())
        device_->zero(m->data(), m->size());
  }
  parametersChanged();
  for (auto &[param, q] : narrow)
    installInferenceWeight(param, q);
}

} // namespace fbt
