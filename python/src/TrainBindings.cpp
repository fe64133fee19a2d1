//===- TrainBindings.cpp - fbt.Trainer: fbt train's loop in-process -------===//
//
// The runtime's Trainer (runtime/train/Trainer.h) over an fbt.Session: the
// same data, schedule, validation, checkpoints and run folder as `fbt
// train`, with each step's and each validation's record (the lines of
// metrics.jsonl, as dicts) handed to a Python callback. Ctrl-C (or an
// exception in the callback) stops the run after the step in flight; the
// last checkpoint stays as it was, so the run resumes from it.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"
#include "PySession.h"

#include "runtime/train/Trainer.h"

#include <pybind11/stl.h>

#include <memory>
#include <optional>

namespace fbt::python {

namespace {

/// Calls the Python callback with each record, holding the GIL.
class CallbackObserver : public TrainObserver {
public:
  explicit CallbackObserver(py::object callback) : callback_(std::move(callback)) {}
  void stepDone(const StepRecord &r) override { report(r.toJson()); }
  void evaluated(const EvalRecord &r) override { report(r.toJson()); }

private:
  void report(const Json &record) {
    py::gil_scoped_acquire held;
    if (PyErr_CheckSignals() != 0)
      throw py::error_already_set();
    if (!callback_.is_none())
      callback_(toPython(record));
  }
  py::object callback_;
};

std::optional<std::string> textOf(const py::dict &o, const char *key) {
  if (!o.contains(key) || o[key].is_none())
    return std::nullopt;
  return py::str(o[key]).cast<std::string>();
}
std::optional<int64_t> intOf(const py::dict &o, const char *key) {
  if (!o.contains(key) || o[key].is_none())
    return std::nullopt;
  if (!py::isinstance<py::int_>(o[key]) || py::isinstance<py::bool_>(o[key]))
    throw py::type_error(std::string(key) + ": expected an integer");
  return o[key].cast<int64_t>();
}
std::optional<double> numberOf(const py::dict &o, const char *key) {
  if (!o.contains(key) || o[key].is_none())
    return std::nullopt;
  return o[key].cast<double>();
}

/// The keyword arguments as fbt train's options (the same names, with
/// underscores).
TrainOptions trainOptions(const py::dict &o) {
  static const char *known[] = {"data",        "tokenizer",    "val_fraction", "test_fraction",
                                "steps",       "seed",         "lr",           "warmup",
                                "eval_every",  "eval_batches", "save_every",   "accumulate",
                                "out",         "resume",       "init",         "stop_after"};
  for (auto [k, v] : o) {
    std::string key = k.cast<std::string>();
    if (std::find(std::begin(known), std::end(known), key) == std::end(known)) {
      std::string names;
      for (const char *n : known)
        names += (names.empty() ? "" : ", ") + std::string(n);
      throw py::type_error("Trainer() got an unknown option '" + key + "' (options: " +
                           names + ")");
    }
  }
  TrainOptions t;
  t.data = textOf(o, "data");
  t.tokenizer = textOf(o, "tokenizer");
  t.valFraction = numberOf(o, "val_fraction");
  t.testFraction = numberOf(o, "test_fraction");
  t.steps = intOf(o, "steps");
  if (auto seed = intOf(o, "seed")) {
    if (*seed < 0)
      throw py::value_error("seed must be >= 0, got " + std::to_string(*seed));
    t.seed = uint64_t(*seed);
  }
  t.learningRate = numberOf(o, "lr");
  t.warmupSteps = intOf(o, "warmup");
  t.evalEvery = intOf(o, "eval_every");
  t.evalBatches = intOf(o, "eval_batches");
  t.saveEvery = intOf(o, "save_every");
  t.accumulate = intOf(o, "accumulate");
  t.outDir = textOf(o, "out").value_or("");
  t.resume = textOf(o, "resume").value_or("");
  t.init = textOf(o, "init").value_or("");
  t.stopAfter = intOf(o, "stop_after").value_or(0);
  if (o.contains("stop_after") && !o["stop_after"].is_none() && t.stopAfter < 1)
    throw py::value_error("stop_after must be at least 1");
  return t;
}

Json summaryJson(const TrainSummary &s) {
  Json j = {{"start_step", s.startStep},       {"end_step", s.endStep},
            {"total_steps", s.totalSteps},     {"finished", s.finished},
            {"first_loss", s.firstLoss},       {"last_loss", s.lastLoss},
            {"window", s.window},              {"tokens_per_s", s.tokensPerSecond},
            {"checkpoint", s.checkpoint}};
  if (s.lastEval)
    j["last_eval"] = s.lastEval->toJson();
  return j;
}

/// A Trainer over a session, which it keeps alive.
class PyTrainer {
public:
  PyTrainer(PySession &session, const py::dict &options) : session_(session) {
    TrainOptions o = trainOptions(options);
    py::gil_scoped_release unlocked;
    auto locked = session_.lock();
    trainer_ = std::make_unique<Trainer>(session_.session(), o);
  }
  py::object run(const py::object &progress) {
    CallbackObserver observer(progress);
    TrainSummary s;
    {
      py::gil_scoped_release unlocked;
      auto locked = session_.lock();
      s = trainer_->run(&observer);
    }
    return toPython(summaryJson(s));
  }
  Trainer &trainer() { return *trainer_; }

private:
  PySession &session_;
  std::unique_ptr<Trainer> trainer_;
};

} // namespace

void defineTrainer(py::module_ &m) {
  py::class_<PyTrainer>(m, "_Trainer")
      .def(py::init<PySession &, const py::dict &>(), py::arg("session"), py::arg("options"),
           py::keep_alive<1, 2>())
      .def("run", &PyTrainer::run, py::arg("progress") = py::none())
      .def_property_readonly("out_dir",
                             [](PyTrainer &t) { return t.trainer().outDir(); })
      .def_property_readonly("start_step",
                             [](PyTrainer &t) { return t.trainer().startStep(); })
      .def_property_readonly("end_step", [](PyTrainer &t) { return t.trainer().endStep(); })
      .def_property_readonly("settings", [](PyTrainer &t) {
        return toPython(t.trainer().settings().toJson());
      });
}

} // namespace fbt::python
