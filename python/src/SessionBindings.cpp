//===- SessionBindings.cpp - fbt.Session: a bundle ready to run -----------===//
//
// A runtime Session (runtime/session/Session.h) and, made when first asked
// for, the Decoder over it (runtime/decode/Decoder.h): training and
// evaluation steps, the three regimes' generation, every layer's states,
// checkpoints and parameters. Each call releases the GIL while the runtime
// works and holds the session's lock, taken after the GIL is let go (so a
// callback that takes the GIL back can never wait on a thread that waits
// for the lock while holding the GIL).
//
//===----------------------------------------------------------------------===//

#include "Arrays.h"
#include "Bindings.h"
#include "PySession.h"

#include "runtime/base/Error.h"
#include "runtime/eval/Evaluation.h"
#include "runtime/eval/LayerProbes.h"
#include "runtime/eval/Tasks.h"
#include "runtime/format/StepNames.h"
#include "runtime/hal/cpu/CpuThreads.h"
#include "runtime/text/GrowingText.h"
#include "runtime/train/HeldOutData.h"
#include "runtime/tune/Tuner.h"

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <optional>

namespace fbt::python {

PySession::PySession(const std::string &bundle, const std::optional<std::string> &ckpt,
                     std::optional<int> threads, std::optional<uint64_t> seed, bool tune,
                     const std::string &tuneCache, const std::optional<std::string> &tokenizer) {
  if (threads) {
    if (*threads < 1 || *threads > kMaxCpuThreads)
      throw py::value_error("threads: expected a count from 1 to " +
                            std::to_string(kMaxCpuThreads) + ", got " +
                            std::to_string(*threads));
    setCpuThreads(*threads);
  }
  py::gil_scoped_release unlocked;
  session_ = std::make_unique<Session>(bundle);
  TuneOptions t;
  t.enabled = tune;
  t.path = tuneCache;
  useTuning(*session_, t);
  if (ckpt)
    session_->loadCheckpoint(*ckpt);
  else
    session_->initialize(seed.value_or(session_->model().training.seed));
  if (tokenizer)
    session_->setTokenizer(*tokenizer);
}

Decoder &PySession::decoder() {
  if (!decoder_)
    decoder_ = std::make_unique<Decoder>(*session_);
  return *decoder_;
}

namespace {

using Int32Array = py::array_t<int32_t, py::array::c_style>;

/// (ids, targets) of a training or evaluation batch: `targets` given, both
/// [B, T]; else `tokens` is [B, T + 1] and they are its two shifted views.
struct Batch {
  Int32Array ids, targets;
};

Batch batchOf(const Session &s, const py::handle &tokens, const py::handle &targets) {
  int64_t b = s.model().training.batchSize, t = s.model().training.sequenceLength;
  Batch out;
  if (targets.is_none()) {
    Int32Array all = tokenArray(tokens, 2, "tokens");
    expectShape(all, b, t + 1, "tokens (no targets: the targets are tokens shifted by one)");
    out.ids = Int32Array({b, t});
    out.targets = Int32Array({b, t});
    for (int64_t r = 0; r < b; ++r) {
      std::copy_n(all.data() + r * (t + 1), t, out.ids.mutable_data() + r * t);
      std::copy_n(all.data() + r * (t + 1) + 1, t, out.targets.mutable_data() + r * t);
    }
    return out;
  }
  out.ids = tokenArray(tokens, 2, "tokens");
  out.targets = tokenArray(targets, 2, "targets");
  expectShape(out.ids, b, t, "tokens");
  expectShape(out.targets, b, t, "targets");
  return out;
}

/// The compiled K of every step named `prefix`<K> (train_k, eval_k).
std::vector<int64_t> compiledPasses(const Session &s, const std::string &prefix) {
  std::vector<int64_t> ks;
  for (const auto &[name, plan] : s.bundle().steps())
    if (name.rfind(prefix, 0) == 0 && name.find("_grads") == std::string::npos &&
        step::passesOf(name) > 0)
      ks.push_back(step::passesOf(name));
  std::sort(ks.begin(), ks.end());
  return ks;
}

/// ValueError unless the bundle has the step `step` (K = `passes`).
void checkPasses(const Session &s, const std::string &step, const std::string &prefix,
                 int64_t passes) {
  if (passes >= 1 && s.bundle().hasStep(step))
    return;
  std::string have;
  for (int64_t k : compiledPasses(s, prefix))
    have += (have.empty() ? "" : ", ") + std::to_string(k);
  throw py::value_error("passes=" + std::to_string(passes) + ": the bundle has no " + step +
                        " step (compiled K: " + (have.empty() ? "none" : have) + ")");
}

StepResult trainStep(PySession &p, const py::handle &tokens, const py::handle &targets,
                     int64_t passes, std::optional<double> lr, uint64_t seed) {
  Session &s = p.session();
  Batch b = batchOf(s, tokens, targets);
  checkPasses(s, step::train(passes), "train_k", passes);
  float rate = float(lr.value_or(s.model().training.learningRate));
  if (!(rate >= 0))
    throw py::value_error("lr must be >= 0");
  py::gil_scoped_release unlocked;
  auto locked = p.lock();
  return s.trainStep(passes, b.ids.data(), b.targets.data(), seed, rate);
}

StepResult evalStep(PySession &p, const py::handle &tokens, const py::handle &targets,
                    std::optional<int64_t> passes) {
  Session &s = p.session();
  Batch b = batchOf(s, tokens, targets);
  int64_t k = passes.value_or(s.evalPasses());
  checkPasses(s, step::eval(k), "eval_k", k);
  py::gil_scoped_release unlocked;
  auto locked = p.lock();
  return s.evalStep(k, b.ids.data(), b.targets.data());
}

std::vector<Regime> regimesOf(const std::optional<std::vector<std::string>> &names) {
  std::vector<Regime> out;
  if (names)
    for (const std::string &n : *names)
      out.push_back(Regime::parse(n));
  return out;
}

py::object evaluate(PySession &p, const py::handle &tokens,
                    const std::optional<std::vector<std::string>> &regimes,
                    std::optional<int64_t> windows, double promptFraction,
                    std::optional<int64_t> passes, std::optional<bool> byteLevel) {
  Session &s = p.session();
  Int32Array a = tokenArray(tokens, 1, "tokens");
  LossOptions o;
  o.windows = windows.value_or(0);
  if (windows && *windows < 1)
    throw py::value_error("windows: expected a count >= 1 (None: every window)");
  o.promptFraction = promptFraction;
  o.passes = passes.value_or(std::min<int64_t>(8, s.evalPasses()));
  o.regimes = regimesOf(regimes);
  o.byteLevel = byteLevel.value_or(s.tokenizerName() == "bytes");
  TokenStream heldOut(std::vector<int32_t>(a.data(), a.data() + a.size()), "<tokens>");
  LossReport r;
  {
    py::gil_scoped_release unlocked;
    auto locked = p.lock();
    r = evaluateLosses(s, heldOut, o);
  }
  return toPython(toJson(r));
}

/// Generation for text prompts, batched as fbt generate batches them.
/// `onText(row, piece)` sees each piece of text as it is added; a false
/// return ends that row. A Python exception in it ends every row and is
/// raised once the decoder is done. Each row's text is bytes (a cut may end
/// inside a character); with `keepStates`, (text, states): the top-layer
/// state carried out of each generated token's step, [tokens, D].
py::list generate(PySession &p, const std::vector<std::string> &prompts,
                  const std::optional<std::string> &mode, int64_t maxNew, double temperature,
                  int64_t topK, double topP, uint64_t seed, const std::string &stop,
                  const py::object &onText, bool keepStates) {
  Session &s = p.session();
  if (maxNew < 1)
    throw py::value_error("max_new_tokens must be >= 1");
  SamplingOptions sampling;
  sampling.temperature = temperature;
  sampling.topK = topK;
  sampling.topP = topP;
  sampling.seed = seed;
  checkSampling(sampling);
  std::vector<std::string> out(prompts.size());
  std::vector<std::vector<float>> kept(prompts.size());
  int64_t width = 0;
  std::optional<py::error_already_set> raised;
  {
    py::gil_scoped_release unlocked;
    auto locked = p.lock();
    Decoder &decoder = p.decoder();
    Regime regime = mode ? Regime::parse(*mode) : decoder.defaultRegime();
    decoder.checkRegime(regime);
    const Tokenizer &tok = s.tokenizer();
    int32_t separator = tok.documentSeparator();
    for (size_t first = 0; first < prompts.size(); first += decoder.batchSize()) {
      size_t count = std::min<size_t>(decoder.batchSize(), prompts.size() - first);
      std::vector<std::vector<int32_t>> ids;
      std::vector<GrowingText> texts(count);
      for (size_t i = 0; i < count; ++i)
        ids.push_back(encodeDocument(tok, prompts[first + i]));
      width = decoder.width();
      decoder.generate(ids, regime, sampling, maxNew, [&](int64_t row, int32_t id) {
        if (raised)
          return false;
        if (keepStates)
          kept[first + row].insert(kept[first + row].end(), decoder.state(row),
                                   decoder.state(row) + width);
        std::string piece = texts[row].add(tok, id);
        bool more = id != separator && !texts[row].endsWith(stop);
        if (!onText.is_none() && !piece.empty()) {
          py::gil_scoped_acquire held;
          try {
            py::object r = onText(int64_t(first) + row, py::bytes(piece));
            if (!r.is_none() && !r.cast<bool>())
              more = false;
          } catch (py::error_already_set &e) {
            raised.emplace(std::move(e));
            return false;
          }
        }
        return more;
      });
      for (size_t i = 0; i < count; ++i)
        out[first + i] = texts[i].text;
      if (raised)
        break;
    }
  }
  if (raised)
    throw std::move(*raised);
  py::list texts;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!keepStates) {
      texts.append(py::bytes(out[i]));
      continue;
    }
    py::ssize_t steps = width ? py::ssize_t(kept[i].size()) / width : 0;
    texts.append(py::make_tuple(py::bytes(out[i]),
                                ownedArray(std::move(kept[i]), {steps, py::ssize_t(width)})));
  }
  return texts;
}

/// Every layer's residual stream: [passes, L + 1, N, T, D] (without N for
/// one 1-D prompt), zeros past each prompt's length.
py::array states(PySession &p, const py::handle &tokens, int64_t passes,
                 const std::optional<std::vector<int64_t>> &lengths) {
  Session &s = p.session();
  py::array given = py::array::ensure(tokens);
  bool single = given && given.ndim() == 1;
  Int32Array a = tokenArray(tokens, single ? 1 : 2, "tokens");
  std::vector<std::vector<int32_t>> rows = tokenRows(a);
  int64_t width = rows.empty() ? 0 : int64_t(rows[0].size());
  if (width < 1)
    throw py::value_error("tokens: expected at least one token per prompt");
  if (lengths) {
    if (lengths->size() != rows.size())
      throw py::value_error("lengths: expected one per prompt (" + std::to_string(rows.size()) +
                            "), got " + std::to_string(lengths->size()));
    for (size_t i = 0; i < rows.size(); ++i) {
      if ((*lengths)[i] < 1 || (*lengths)[i] > width)
        throw py::value_error("lengths[" + std::to_string(i) + "]: expected 1.." +
                              std::to_string(width) + ", got " +
                              std::to_string((*lengths)[i]));
      rows[i].resize((*lengths)[i]);
    }
  }
  if (passes < 1)
    throw py::value_error("passes must be >= 1");
  int64_t layers = s.model().numHiddenLayers + 1, d = s.model().hiddenSize;
  int64_t n = int64_t(rows.size());
  std::vector<float> out;
  {
    py::gil_scoped_release unlocked;
    auto locked = p.lock();
    Decoder &decoder = p.decoder();
    out.assign(size_t(passes * layers * n * width * d), 0.0f);
    for (int64_t first = 0; first < n; first += decoder.batchSize()) {
      int64_t count = std::min<int64_t>(decoder.batchSize(), n - first);
      std::vector<std::vector<int32_t>> batch(rows.begin() + first,
                                              rows.begin() + first + count);
      auto got = decoder.layerStates(batch, passes);
      for (int64_t k = 0; k < passes; ++k)
        for (int64_t l = 0; l < layers; ++l)
          for (int64_t i = 0; i < count; ++i) {
            const std::vector<float> &v = got[k][l][i];
            float *to = out.data() + (((k * layers + l) * n + first + i) * width) * d;
            std::copy(v.begin(), v.end(), to);
          }
    }
  }
  if (single)
    return ownedArray(std::move(out), {passes, layers, width, d});
  return ownedArray(std::move(out), {passes, layers, n, width, d});
}

/// `f(session)` with the GIL let go and the session's lock held.
template <typename F> auto unlockedCall(PySession &p, F f) {
  py::gil_scoped_release unlocked;
  auto locked = p.lock();
  return f(p.session());
}

HeldOutOptions heldOutOptions(const std::optional<std::string> &data,
                              std::optional<double> valFraction,
                              std::optional<double> testFraction,
                              const std::optional<std::string> &run) {
  HeldOutOptions o;
  o.data = data.value_or("");
  o.ckpt = run.value_or("");
  o.valFraction = valFraction;
  o.testFraction = testFraction;
  return o;
}

/// `measure(session, data)` on the run's data as its run cut it (fbt eval's
/// and fbt probe's --data, fractions and run), unlocked; its JSON as Python.
template <typename F>
py::object onHeldOut(PySession &p, const std::optional<std::string> &data,
                     std::optional<double> valFraction, std::optional<double> testFraction,
                     const std::optional<std::string> &run, F measure) {
  HeldOutOptions o = heldOutOptions(data, valFraction, testFraction, run);
  return toPython(unlockedCall(p, [&](Session &s) {
    HeldOutData d = loadHeldOutData(s, o);
    return measure(s, d);
  }));
}

/// One part of a run's data as its run cut it: (ids, byte_level, documents).
py::tuple heldOut(PySession &p, const std::string &split, const std::optional<std::string> &data,
                  std::optional<double> valFraction, std::optional<double> testFraction,
                  const std::optional<std::string> &run) {
  DataPart part = parsePart(split);
  HeldOutOptions o = heldOutOptions(data, valFraction, testFraction, run);
  HeldOutData d = unlockedCall(p, [&](Session &s) { return loadHeldOutData(s, o); });
  const TokenStream &ids = d.splits.part(part);
  Int32Array out(py::ssize_t(ids.size()));
  if (ids.size())
    ids.copy(0, ids.size(), out.mutable_data());
  return py::make_tuple(out, d.byteLevel, d.splits.documentsIn(part));
}

/// fbt eval --task's JSON: greedy exact-match accuracy per regime on
/// held-out problems (none of whose facts are in the run's data).
py::object task(PySession &p, const std::string &name, int64_t problems,
                const std::optional<std::vector<std::string>> &regimes, uint64_t seed,
                const std::optional<std::string> &data, std::optional<double> valFraction,
                std::optional<double> testFraction, const std::optional<std::string> &run) {
  std::vector<Regime> rs = regimesOf(regimes);
  return onHeldOut(p, data, valFraction, testFraction, run, [&](Session &s, HeldOutData &d) {
    return toJson(name, evaluateTaskOnData(s, name, d.tokens, d.ids, rs, problems, seed));
  });
}

/// fbt eval --contraction's JSON over prompts and windows of a held-out part.
py::object contraction(PySession &p, const std::string &split, int64_t passes, int64_t prompts,
                       int64_t sequences, int64_t generate,
                       const std::optional<std::string> &data,
                       std::optional<double> valFraction, std::optional<double> testFraction,
                       const std::optional<std::string> &run) {
  DataPart part = parsePart(split);
  ContractionOptions o;
  o.passes = passes;
  o.prompts = prompts;
  o.sequences = sequences;
  o.generate = generate;
  return onHeldOut(p, data, valFraction, testFraction, run, [&](Session &s, HeldOutData &d) {
    return toJson(evaluateContractionOn(s, d.splits.part(part), o));
  });
}

/// fbt probe --json's object over windows of a held-out part.
py::object probeLayersOf(PySession &p, const std::string &split,
                         const std::vector<std::string> &targets, std::optional<int64_t> passes,
                         bool soft, int64_t windows, uint64_t seed,
                         const std::optional<std::string> &data,
                         std::optional<double> valFraction, std::optional<double> testFraction,
                         const std::optional<std::string> &run) {
  DataPart part = parsePart(split);
  if (part == DataPart::Train)
    throw RuntimeError("split 'train': a probe measures held-out parts");
  LayerProbeOptions options;
  options.targets.clear();
  for (const std::string &t : targets)
    options.targets.push_back(probe::parseTarget(t));
  if (passes && *passes < 1)
    throw RuntimeError("passes must be >= 1, got " + std::to_string(*passes));
  options.passes = passes.value_or(0);
  options.soft = soft;
  options.windows = windows;
  options.seed = seed;
  return onHeldOut(p, data, valFraction, testFraction, run, [&](Session &s, HeldOutData &d) {
    return probeLayers(s, d.splits.part(part), partName(part), options);
  });
}

py::array parameter(PySession &p, const std::string &name) {
  Session &s = p.session();
  int64_t i = s.paramIndex(name);
  if (i < 0)
    throw py::key_error("no parameter named '" + name + "'");
  std::vector<float> values;
  {
    py::gil_scoped_release unlocked;
    auto locked = p.lock();
    values = s.parameter(size_t(i));
  }
  const std::vector<int64_t> &shape = s.bundle().params()[size_t(i)].shape;
  return ownedArray(std::move(values), std::vector<py::ssize_t>(shape.begin(), shape.end()));
}

std::vector<std::string> parameterNames(PySession &p) {
  std::vector<std::string> names;
  for (const ParamSpec &ps : p.session().bundle().params())
    names.push_back(ps.name);
  return names;
}

/// Construction, properties, steps, generation, states, parameters and
/// checkpoints.
void defineSessionCore(py::class_<PySession> &session) {
  session
      .def(py::init<const std::string &, const std::optional<std::string> &, std::optional<int>,
                    std::optional<uint64_t>, bool, const std::string &,
                    const std::optional<std::string> &>(),
           py::arg("bundle"), py::arg("ckpt") = py::none(), py::arg("threads") = py::none(),
           py::arg("seed") = py::none(), py::arg("tune") = true, py::arg("tune_cache") = "",
           py::arg("tokenizer") = py::none())
      .def_property_readonly("config",
                             [](PySession &p) { return toPython(p.session().config()); })
      .def_property_readonly("bundle_path",
                             [](PySession &p) { return p.session().bundle().path(); })
      .def_property_readonly("step", [](PySession &p) { return p.session().state().step; })
      .def_property_readonly("tokenizer",
                             [](PySession &p) { return p.session().tokenizerName(); })
      .def_property_readonly("document_separator",
                             [](PySession &p) {
                               return unlockedCall(p, [](Session &s) {
                                 return s.tokenizer().documentSeparator();
                               });
                             })
      .def_property_readonly("train_passes",
                             [](PySession &p) { return compiledPasses(p.session(), "train_k"); })
      .def_property_readonly("eval_passes",
                             [](PySession &p) { return p.session().evalPasses(); })
      .def_property_readonly("parameter_names", &parameterNames)
      .def("train_step", &trainStep, py::arg("tokens"), py::arg("targets") = py::none(),
           py::arg("passes") = 1, py::arg("lr") = py::none(), py::arg("seed") = 0)
      .def("eval_step", &evalStep, py::arg("tokens"), py::arg("targets") = py::none(),
           py::arg("passes") = py::none())
      .def("evaluate", &evaluate, py::arg("tokens"), py::arg("regimes") = py::none(),
           py::arg("windows") = py::none(), py::arg("prompt_fraction") = 0.25,
           py::arg("passes") = py::none(), py::arg("byte_level") = py::none())
      .def("_generate", &generate, py::arg("prompts"), py::arg("mode"),
           py::arg("max_new_tokens"), py::arg("temperature"), py::arg("top_k"),
           py::arg("top_p"), py::arg("seed"), py::arg("stop"), py::arg("on_text"),
           py::arg("keep_states") = false)
      .def("states", &states, py::arg("tokens"), py::arg("passes") = 1,
           py::arg("lengths") = py::none())
      .def("parameter", &parameter, py::arg("name"))
      .def("encode",
           [](PySession &p, const std::string &text) {
             std::vector<int32_t> ids =
                 unlockedCall(p, [&](Session &s) { return s.tokenizer().encode(text); });
             py::ssize_t n = py::ssize_t(ids.size());
             return ownedArray(std::move(ids), {n});
           },
           py::arg("text"))
      .def("decode",
           [](PySession &p, const py::handle &ids) {
             Int32Array a = tokenArray(ids, 1, "ids");
             std::vector<int32_t> v(a.data(), a.data() + a.size());
             return py::bytes(unlockedCall(p, [&](Session &s) { return s.tokenizer().decode(v); }));
           },
           py::arg("ids"))
      .def("save",
           [](PySession &p, const std::string &path) {
             unlockedCall(p, [&](Session &s) {
               s.saveCheckpoint(path);
               return 0;
             });
           },
           py::arg("path"))
      .def("load",
           [](PySession &p, const std::string &path) {
             unlockedCall(p, [&](Session &s) {
               s.loadCheckpoint(path);
               return 0;
             });
           },
           py::arg("path"));
}

/// The measures on a run's held-out data (fbt eval's and fbt probe's),
/// each taking the data, fractions and run last.
void defineHeldOutMeasures(py::class_<PySession> &session) {
  session
      .def("_held_out", &heldOut, py::arg("split"), py::arg("data"), py::arg("val_fraction"),
           py::arg("test_fraction"), py::arg("run"))
      .def("_task", &task, py::arg("name"), py::arg("problems"), py::arg("regimes"),
           py::arg("seed"), py::arg("data"), py::arg("val_fraction"), py::arg("test_fraction"),
           py::arg("run"))
      .def("_contraction", &contraction, py::arg("split"), py::arg("passes"),
           py::arg("prompts"), py::arg("sequences"), py::arg("generate"), py::arg("data"),
           py::arg("val_fraction"), py::arg("test_fraction"), py::arg("run"))
      .def("_probe", &probeLayersOf, py::arg("split"), py::arg("targets"), py::arg("passes"),
           py::arg("soft"), py::arg("windows"), py::arg("seed"), py::arg("data"),
           py::arg("val_fraction"), py::arg("test_fraction"), py::arg("run"));
}
} // namespace

void defineSession(py::module_ &m) {
  py::class_<StepResult>(m, "StepResult", "One step's losses")
      .def_readonly("loss", &StepResult::loss, "the step's loss (the passes' weighted sum)")
      .def_readonly("pass_losses", &StepResult::passLosses, "each pass's next-token loss")
      .def_readonly("grad_norm", &StepResult::gradNorm, "the gradient's norm before clipping")
      .def("__repr__", [](const StepResult &r) {
        std::string s = "StepResult(loss=" + std::to_string(r.loss) + ", pass_losses=[";
        for (size_t i = 0; i < r.passLosses.size(); ++i)
          s += (i ? ", " : "") + std::to_string(r.passLosses[i]);
        return s + "], grad_norm=" + std::to_string(r.gradNorm) + ")";
      });

  py::class_<PySession> session(m, "_Session");
  defineSessionCore(session);
  defineHeldOutMeasures(session);
}


} // namespace fbt::python
