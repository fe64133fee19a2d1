//===- Session.h - a loaded bundle ready to run ---------------------*- C++ -*-===//
//
// A Session holds a bundle, the device that runs it (Device.h: the CPU or a
// GPU, as the bundle's target says), one StepRunner per step used (each with
// its arena), and the model's state on that device: parameters, AdamW
// moments and the optimizer's step count. Batches go in and losses come out
// through host memory; checkpoints are read and written on the host, so
// they are the same files whichever device trained them. Checkpoints are safetensors with
// HF Llama names for the shared weights (so standard tools load the K=1
// model), `feedback.*` for the feedback path, and `optimizer.adam_m.*`,
// `optimizer.adam_v.*` beside them; the step count and seed are metadata.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_SESSION_SESSION_H
#define FBT_RUNTIME_SESSION_SESSION_H

#include "runtime/base/AlignedBuffer.h"
#include "runtime/format/Bundle.h"
#include "runtime/format/ModelConfig.h"
#include "runtime/format/QuantizedWeights.h"
#include "runtime/format/Safetensors.h"
#include "runtime/hal/Channel.h"
#include "runtime/hal/Device.h"
#include "runtime/session/GradientSync.h"
#include "runtime/session/StepBinding.h"
#include "runtime/text/Tokenizer.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fbt {

struct ModelState {
  /// In Bundle::params() order. Under ZeRO-1 a rank keeps the moments of
  /// the parameters it owns only: the others' buffers are empty.
  std::vector<DeviceBuffer> params, m, v;
  int64_t step = 0;                        ///< optimizer steps taken
  uint64_t seed = 0;
};

struct StepResult {
  float loss = 0;
  std::vector<float> passLosses;
  float gradNorm = 0;
};

class Session {
public:
  explicit Session(const std::string &bundlePath);

  const Bundle &bundle() const { return bundle_; }
  Device &device() { return *device_; }
  ModelState &state() { return state_; }
  int64_t paramIndex(const std::string &name) const;
  /// The state buffer (device memory) a step input names: a parameter,
  /// `adam_m.<param>`, `adam_v.<param>`, or a parameter in its inference
  /// form (WeightNames.h: `int8.<param>`, `int8_scales.<param>`,
  /// `bf16.<param>`, made from the parameter when first asked for); null
  /// for any other name.
  void *stateBuffer(const std::string &name);
  /// Remakes the inference forms of the parameters that changed since they
  /// were made (by training, a checkpoint or initialize()); nothing when
  /// none did. The decoder and evalStep() call it before they run.
  void refreshInferenceWeights();
  /// Parameter `index`'s values, copied to the host.
  std::vector<float> parameter(size_t index) const;
  /// The bundle's model config (the resolved spec), as JSON: for what
  /// writes it out whole.
  const Json &config() const { return bundle_.model(); }
  /// The same, read once when the session opened the bundle.
  const ModelConfig &model() const { return model_; }

  StepRunner &runner(const std::string &step);
  /// The probe of every runner, made now or later (the tuner's; null: none).
  void setProbe(CallProbe *probe);
  /// Frees every step's runner and binding (their arenas); the next run of
  /// a step makes them again. No Decoder may be alive.
  void releaseSteps();

  /// Runs `kernels`' chosen builds and `gemms`' algorithms in every step
  /// (the tune cache's choice: useTuning(), tune/Tuner.h); call before any
  /// step runs. The session is then tuned().
  void selectBuilds(KernelChoice kernels, GemmChoice gemms);
  bool tuned() const { return tuned_; }

  /// Fresh parameters from `seed` (normal(0, 0.02), norms at 1), zero moments.
  void initialize(uint64_t seed);
  /// Writes the model and its moments. In a run of several ranks every rank
  /// calls it and rank 0 writes (under ZeRO-1 the others' moments are
  /// gathered to it first).
  void saveCheckpoint(const std::string &path);
  /// The tokenizer of this run (runtime/text/Tokenizer.h): "bytes" unless set,
  /// or recorded in a loaded checkpoint (metadata fbt.tokenizer). Its
  /// vocabulary must fit the model's.
  void setTokenizer(const std::string &name);
  const std::string &tokenizerName() const { return tokenizerName_; }
  const Tokenizer &tokenizer();
  /// Loads parameters (and moments, if present; else zero; under ZeRO-1
  /// those this rank keeps). Every parameter must be there with the
  /// bundle's shape. A file saveInferenceWeights wrote is read as its
  /// inference weights (the bundle's form only), its matrices bound as stored.
  void loadCheckpoint(const std::string &path);
  /// Writes the parameters as the inference steps read them
  /// (runtime/format/InferenceFile.h: each narrow matrix in the bundle's
  /// inference form, the rest f32), atomically; for a bundle compiled with
  /// bf16 or int8 inference weights.
  void saveInferenceWeights(const std::string &path);
  /// Starts from another run's weights (`fbt train --init`): after
  /// initialize(), loads every parameter the checkpoint `path` holds, its
  /// moments and step left behind. Returns the bundle's parameters the
  /// checkpoint lacks (the feedback weights of a plain model's checkpoint),
  /// which keep their initial values. Throws one line naming every tensor of
  /// the wrong shape and every one the bundle has no parameter for.
  std::vector<std::string> loadWeights(const std::string &path);

  /// Whether the training steps shard AdamW's state over the ranks
  /// (training.zero = 1: the plans give calls to one rank, PlanOp::shard).
  bool shardsOptimizer() const;
  /// Whether this rank keeps parameter `index`'s moments: every rank does,
  /// unless the optimizer is sharded; then its owner only.
  bool keepsMoments(size_t index);
  /// The bytes of AdamW moments this rank keeps.
  int64_t momentBytes();

  /// Joins the ranks of a data-parallel run (hal/Channel.h): the training
  /// steps' collectives then reduce over them. Until then, and when never
  /// called, the session is a world of one. Call before any step runs; the
  /// channel must outlive the session.
  void setChannel(Channel &channel);
  Channel &channel();
  /// Seconds the training steps spent in their collectives so far, not
  /// overlapped with their own work (GradientSync::exposedSeconds).
  double collectiveSeconds() const { return sync_ ? sync_->exposedSeconds() : 0; }

  /// One optimizer step of train_k<K>: (ids, targets) are [B, T] int32.
  /// Its gradients and losses are the mean over every rank's micro-batch
  /// and the micro-batches accumulated before it (accumulateStep).
  StepResult trainStep(int64_t passes, const int32_t *ids, const int32_t *targets,
                       uint64_t seed, float lr);
  /// Loss and per-pass losses without an update (train_k<K>_grads), and the
  /// gradients when `grads` is non-null (one buffer per parameter).
  StepResult gradientStep(int64_t passes, const int32_t *ids, const int32_t *targets,
                          uint64_t seed, std::vector<AlignedBuffer> *grads = nullptr);
  /// Runs train_k<K>_grads on a micro-batch and keeps its gradients and
  /// losses, which the next trainStep (same K) adds to its own before
  /// reducing: gradient accumulation. Returns this micro-batch's losses.
  StepResult accumulateStep(int64_t passes, const int32_t *ids, const int32_t *targets,
                            uint64_t seed);
  /// The per-pass losses in inference mode (eval_k<K>: no jitter, no prefix
  /// mix-in, no gradients): what validation and `fbt eval` report.
  StepResult evalStep(int64_t passes, const int32_t *ids, const int32_t *targets);
  /// The K of the bundle's eval_k<K> step; 0 if it has none.
  int64_t evalPasses() const;

private:
  StepBinding &trainBinding(const std::string &step, bool update);
  /// The inference form of a parameter a step input names (stateBuffer).
  void *inferenceWeight(const std::string &name);
  /// Fills `copy`'s parameter's inference-form buffers from its values.
  void makeInferenceWeight(size_t param);
  /// Binds `given` (row layout) as parameter `param`'s inference form,
  /// current: int8 interleaved where the bundle's target says so.
  void installInferenceWeight(size_t param, const QuantizedMatrix &given);
  /// loadCheckpoint of a file of inference weights in `form`.
  void loadInferenceWeights(const SafetensorsFile &file, WeightForm form);
  /// The step count, seed and tokenizer a checkpoint's metadata records.
  void readCheckpointMetadata(const SafetensorsFile &file);
  /// A checkpoint tensor's values as parameter `p` takes them: its shape,
  /// finite (errors name `path` and the tensor).
  static std::vector<float> checkpointValues(const std::string &path, const Tensor &t,
                                             const ParamSpec &p);
  /// The parameters changed: their inference forms are stale.
  void parametersChanged() { ++paramsVersion_; }
  /// Allocates the moments this rank keeps, once (the run's ranks are known
  /// by then: setChannel comes first).
  void allocateMoments();
  GradientSync &sync();
  std::string tokenizerName_ = "bytes";
  bool tuned_ = false;
  bool shardsOptimizer_ = false; ///< a plan gives calls to one rank (ZeRO-1)
  CallProbe *probe_ = nullptr;
  std::unique_ptr<Tokenizer> tokenizer_;

  // Declared in the order they depend on each other: runners, bindings and
  // state hold device memory and go before the device, the device before
  // the bundle whose plans and kernels it holds.
  Bundle bundle_;
  ModelConfig model_; ///< parsed from bundle_.model(), before the device opens
  std::unique_ptr<Device> device_;
  /// The arena the training, gradient-only and validation steps share
  /// (StepRunner::shareArena): the largest of theirs, made when one first runs.
  DeviceBuffer trainingArena_;
  std::map<std::string, std::unique_ptr<StepRunner>> runners_;
  std::map<std::string, std::unique_ptr<StepBinding>> bindings_;
  ModelState state_;
  /// A parameter's inference form on the device: its values and, int8, its
  /// scales (empty otherwise), made at parameter version `version`.
  struct InferenceCopy {
    DeviceBuffer values, scales;
    int64_t version = -1;
  };
  std::map<size_t, InferenceCopy> inferenceCopies_; ///< by parameter
  int64_t paramsVersion_ = 0;
  std::unique_ptr<Channel> localChannel_; ///< the world of one, made on demand
  Channel *channel_ = nullptr;
  std::unique_ptr<GradientSync> sync_;
};

} // namespace fbt

#endif // FBT_RUNTIME_SESSION_SESSION_H
