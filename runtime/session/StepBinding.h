//===- StepBinding.h - a step's buffers on the device -------------*- C++ -*-===//
//
// Binds a step's inputs and outputs by name, once: inputs the caller owns
// on the device (parameters, moments, KV caches) by pointer, and a buffer of
// the binding's own for every other input (filled from the host by set())
// and for every output not updated in place (read back by read()). Kept and
// reused from one run to the next, a binding gives the step the same
// buffers every time, which is what lets a GPU replay a captured graph.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_SESSION_STEPBINDING_H
#define FBT_RUNTIME_SESSION_STEPBINDING_H

#include "runtime/hal/Device.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fbt {

class StepBinding {
public:
  /// `owned(name)` is the caller's device buffer for an input, or null.
  /// Inputs named in `hostInputs` get buffers of their own, those in
  /// `absent` stay unbound (null: ZeRO-1's moments another rank keeps, which
  /// only that rank's calls read); any other input is an error naming `who`
  /// ("this runtime", "the decoder") as unable to bind it.
  /// `vocab` bounds the token ids of the inputs that carry them (input_ids,
  /// and targets besides the ignored ones): every id that enters a step
  /// crosses set(), so an id outside [0, vocab) is refused there, before
  /// any kernel reads the embedding row it names.
  StepBinding(Device &device, const StepPlan &plan,
              const std::function<void *(const std::string &)> &owned,
              const std::set<std::string> &hostInputs, const std::string &who,
              int64_t vocab, const std::set<std::string> &absent = {});

  /// Copies `bytes` (the input's full size) from the host into input
  /// `name`; does nothing when the step has no such input.
  void set(const std::string &name, const void *host, size_t bytes);
  /// The device buffer of input or output `name`; RuntimeError if none.
  void *input(const std::string &name) const;
  void *output(const std::string &name) const;
  /// Copies output `name` (all of it, `bytes` checked) to the host.
  void read(const std::string &name, void *host, size_t bytes) const;
  std::vector<float> readFloats(const std::string &name) const;
  bool hasOutput(const std::string &name) const { return plan_.outputIndex(name) >= 0; }

  void run(StepRunner &runner) { runner.run(inputs_, outputs_); }

private:
  Device &device_;
  const StepPlan &plan_;
  int64_t vocab_;
  std::vector<void *> inputs_, outputs_;
  std::vector<DeviceBuffer> buffers_;
};

} // namespace fbt

#endif // FBT_RUNTIME_SESSION_STEPBINDING_H
