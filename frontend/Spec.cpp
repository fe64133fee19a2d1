//===- Spec.cpp - FBT model specs (JSON) ----------------------------------===//
//
// Reading a spec happens in stages, and the first problem found is the one
// reported, as a single line "<source>: <json.path>: expected X, got Y":
//   1. the bytes: a text file (no NUL, valid UTF-8), not empty, not nested
//      deeper than any spec is;
//   2. the JSON syntax (llvm::json), then duplicate keys, which llvm::json
//      would silently resolve to the last one;
//   3. unknown keys everywhere (a misspelled key usually explains every later
//      error, so it goes first);
//   4. each field's type and range, in the order of the tables below;
//   5. consistency between fields. The 64-bit overflow of the figures
//      `describe` computes is the last stage, parseSpec's (LoadSpec.h), so
//      that Describe builds on the spec and not the other way round.
//
// Integer fields take any JSON number with an integral value (64, 64.0, 6.4e1)
// that fits in int64; 2.5 is an error.
//
//===----------------------------------------------------------------------===//

#include "frontend/Spec.h"
#include "frontend/JsonText.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

using namespace fbt;
using llvm::Error;
using llvm::StringRef;
using llvm::Twine;
namespace json = llvm::json;


llvm::StringRef fbt::stateSourceName(StateSource s) {
  return s == StateSource::PreNorm ? "pre_norm" : "post_norm";
}

llvm::StringRef fbt::recipeName(Recipe r) {
  return r == Recipe::Paper ? "paper" : "fbt";
}

std::optional<Recipe> fbt::parseRecipe(StringRef name) {
  if (name == "fbt")
    return Recipe::Fbt;
  if (name == "paper")
    return Recipe::Paper;
  return std::nullopt;
}

void fbt::applyRecipe(Recipe r, FeedbackSpec &fb, TrainingSpec &t) {
  if (r == Recipe::Fbt)
    return; // the struct's defaults are fbt's
  fb.fusion = Fusion::Glu;
  fb.state = StateSource::PreNorm;
  fb.inputNorm = fb.gateNorm = fb.stateNorm = fb.outputNorm = false;
  fb.tokenResidual = false;
  fb.prefixMixin = true;
  t.singlePassFraction = 0.75;
  t.gradPasses = 0;
}

llvm::StringRef fbt::feedbackInitName(FeedbackInit i) {
  return i == FeedbackInit::Normal ? "normal" : "uniform";
}

std::vector<int64_t> ModelSpec::scheduledPasses() const {
  // Without a fusion there is no feedback path, so every step is one pass.
  if (feedback.fusion == Fusion::None)
    return {1};
  // K=1 for the first `singlePassFraction` of the steps; the rest run at
  // `passes`, except `deepPassFraction` of those batches at `deepPasses`
  // (or at the K of `passDistribution`).
  std::vector<int64_t> ks;
  bool multiPassPhase = training.singlePassFraction < 1;
  if (training.singlePassFraction > 0)
    ks.push_back(1);
  if (multiPassPhase && !training.passDistribution.empty()) {
    for (auto [k, w] : training.passDistribution)
      if (w > 0)
        ks.push_back(k);
  } else if (multiPassPhase && training.deepPassFraction < 1)
    ks.push_back(training.passes);
  if (multiPassPhase && training.passDistribution.empty() &&
      training.deepPassFraction > 0)
    ks.push_back(training.deepPasses);
  llvm::sort(ks);
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  return ks;
}

std::vector<std::pair<int64_t, double>> ModelSpec::passShares() const {
  if (feedback.fusion == Fusion::None)
    return {{1, 1.0}};
  double steps = double(training.steps);
  double single =
      std::min(steps, std::ceil(training.singlePassFraction * steps)) / steps;
  std::vector<std::pair<int64_t, double>> multi = training.passDistribution;
  if (multi.empty())
    multi = {{training.passes, 1 - training.deepPassFraction},
             {training.deepPasses, training.deepPassFraction}};
  std::vector<std::pair<int64_t, double>> shares;
  auto add = [&](int64_t k, double w) {
    if (w <= 0)
      return;
    for (auto &kw : shares)
      if (kw.first == k)
        return void(kw.second += w);
    shares.push_back({k, w});
  };
  add(1, single);
  for (auto [k, w] : multi)
    add(k, (1 - single) * w);
  llvm::sort(shares);
  return shares;
}

namespace {

// The keys each object may hold, in the order their fields are checked.
constexpr StringRef kTopKeys[] = {"name",
                                  "recipe",
                                  "vocab_size",
                                  "hidden_size",
                                  "num_hidden_layers",
                                  "num_attention_heads",
                                  "intermediate_size",
                                  "max_position_embeddings",
                                  "rms_norm_eps",
                                  "rope_theta",
                                  "rope_scaling",
                                  "tie_word_embeddings",
                                  "bos_token_id",
                                  "feedback",
                                  "training",
                                  "inference"};
constexpr StringRef kFeedbackKeys[] = {
    "fusion",       "jitter",     "depth_scaling", "detach_state",
    "aux_loss_weight", "prefix_mixin", "state",     "input_norm",
    "gate_norm",    "state_norm", "output_norm",   "token_residual",
    "init",         "init_std"};
constexpr StringRef kTrainingKeys[] = {"single_pass_fraction",
                                       "passes",
                                       "deep_pass_fraction",
                                       "deep_passes",
                                       "pass_distribution",
                                       "grad_passes",
                                       "batch_size",
                                       "sequence_length",
                                       "steps",
                                       "learning_rate",
                                       "beta1",
                                       "beta2",
                                       "adam_epsilon",
                                       "weight_decay",
                                       "warmup_steps",
                                       "min_learning_rate",
                                       "grad_clip",
                                       "seed",
                                       "zero"};
constexpr StringRef kInferenceKeys[] = {"batch_size", "max_prompt_length",
                                        "max_sequence_length", "weights", "activations",
                                        "kv_cache"};

struct SectionKeys {
  StringRef name;
  llvm::ArrayRef<StringRef> keys;
};
const SectionKeys kSections[] = {{"feedback", kFeedbackKeys},
                                 {"training", kTrainingKeys},
                                 {"inference", kInferenceKeys}};

/// Names from other configs (nanoGPT, GPT-2) that a user may reach for; only
/// used to suggest the key this format spells differently.
const std::pair<StringRef, StringRef> kAliases[] = {
    {"n_embd", "hidden_size"},
    {"n_layer", "num_hidden_layers"},
    {"n_head", "num_attention_heads"},
    {"n_positions", "max_position_embeddings"},
    {"n_ctx", "max_position_embeddings"},
    {"block_size", "training.sequence_length"},
    {"lr", "training.learning_rate"},
    {"ffn_dim", "intermediate_size"}};

/// What to suggest for an unknown `key` in `section` ("" = top level): a
/// likely typo of a key of the section, the key's place in another section,
/// or the name this format uses for another config's key.
std::optional<std::string> suggestKey(StringRef section, StringRef key,
                                      llvm::ArrayRef<StringRef> known) {
  // A path relative to `section`: bare within it, qualified elsewhere.
  auto relative = [&](StringRef path) -> std::string {
    auto [first, rest] = path.split('.');
    if (rest.empty())
      return section.empty() ? path.str() : ("the top-level " + path).str();
    return first == section ? rest.str() : path.str();
  };
  for (auto [alias, target] : kAliases)
    if (key == alias)
      return relative(target);
  // The right key in the wrong section, e.g. "training": {"fusion": ...}.
  if (!section.empty() && llvm::is_contained(kTopKeys, key))
    return relative(key);
  for (const SectionKeys &s : kSections)
    if (s.name != section && llvm::is_contained(s.keys, key))
      return relative((s.name + "." + key).str());
  // A typo: the nearest key, if within a third of its length. (Long keys
  // are no typo of a known one, and would make the distance slow.)
  if (key.size() > 64)
    return std::nullopt;
  std::string lower = key.lower();
  std::optional<StringRef> best;
  unsigned bestDistance = 0;
  for (StringRef candidate : known) {
    unsigned d = StringRef(lower).edit_distance(candidate);
    if (!best || d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  if (best && bestDistance <= std::max<size_t>(1, best->size() / 3))
    return best->str();
  return std::nullopt;
}

/// Reads the fields of one JSON object into a spec. Every reader is a no-op
/// once an error has been recorded, so parsing reads as a flat list of
/// fields and reports the first problem.
class Reader {
public:
  explicit Reader(StringRef source) : source(source.str()) {}

  bool failed() const { return error.has_value(); }
  Error takeError() {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   Twine(*error));
  }

  /// Records "<source>: <path>: <message>" unless an error is recorded.
  void fail(const Twine &path, const Twine &message) {
    if (!error)
      error = (source + ": " + path + ": " + message).str();
  }
  void expected(const Twine &path, const Twine &what, const Twine &got) {
    fail(path, "expected " + what + ", got " + got);
  }
  /// Records a root-level error (no JSON path).
  void failRoot(const Twine &message) {
    if (!error)
      error = (source + ": " + message).str();
  }
  /// Records "<source>:<line>:<column>: <message>", the form editors follow.
  void failAt(const Twine &lineColumn, const Twine &message) {
    if (!error)
      error = (source + ":" + lineColumn + ": " + message).str();
  }

  /// Rejects keys of `obj` not in `known`, alphabetically first one first.
  void checkKeys(const json::Object &obj, StringRef section,
                 llvm::ArrayRef<StringRef> known) {
    if (failed())
      return;
    llvm::SmallVector<StringRef> unknown;
    for (const auto &kv : obj)
      if (!llvm::is_contained(known, StringRef(kv.first)))
        unknown.push_back(kv.first);
    if (unknown.empty())
      return;
    llvm::sort(unknown);
    StringRef key = unknown.front();
    std::string message = "unknown key";
    if (std::optional<std::string> s = suggestKey(section, key, known))
      message += " (did you mean " + *s + "?)";
    fail(join(section, key), message);
  }

  static std::string join(StringRef section, StringRef key) {
    return section.empty() ? displayKey(key)
                           : (section + "." + displayKey(key)).str();
  }

  /// The field's value, or null if absent. Records an error if the field
  /// is required and absent.
  const json::Value *get(const json::Object &obj, StringRef section,
                         StringRef key, bool required = false) {
    if (failed())
      return nullptr;
    const json::Value *v = obj.get(key);
    if (!v && required)
      fail(join(section, key), "required field is missing");
    return v;
  }

  void integer(const json::Object &obj, StringRef section, StringRef key,
               int64_t &out, int64_t min, bool required = false,
               std::optional<int64_t> max = std::nullopt) {
    const json::Value *v = get(obj, section, key, required);
    if (!v)
      return;
    std::optional<int64_t> i = asInt64(*v);
    if (!i || *i < min || (max && *i > *max))
      return expected(join(section, key),
                      max ? "an integer in [" + Twine(min) + ", " + Twine(*max) + "]"
                          : "an integer >= " + Twine(min),
                      describeValue(*v));
    out = *i;
  }

  void unsignedInteger(const json::Object &obj, StringRef section,
                       StringRef key, uint64_t &out) {
    const json::Value *v = get(obj, section, key);
    if (!v)
      return;
    std::optional<uint64_t> u = asUInt64(*v);
    if (!u)
      return expected(join(section, key), "an integer in [0, 2^64)",
                      describeValue(*v));
    out = *u;
  }

  enum class Range { Positive, NonNegative, Fraction, HalfOpenFraction };

  void number(const json::Object &obj, StringRef section, StringRef key,
              double &out, Range range) {
    const json::Value *v = get(obj, section, key);
    if (!v)
      return;
    std::optional<double> d = v->getAsNumber();
    bool ok = d && std::isfinite(*d);
    StringRef what;
    switch (range) {
    case Range::Positive:
      what = "a number > 0";
      ok = ok && *d > 0;
      break;
    case Range::NonNegative:
      what = "a number >= 0";
      ok = ok && *d >= 0;
      break;
    case Range::Fraction:
      what = "a number in [0, 1]";
      ok = ok && *d >= 0 && *d <= 1;
      break;
    case Range::HalfOpenFraction:
      what = "a number in [0, 1)";
      ok = ok && *d >= 0 && *d < 1;
      break;
    }
    if (!ok)
      return expected(join(section, key), what, describeValue(*v));
    out = *d;
  }

  void boolean(const json::Object &obj, StringRef section, StringRef key,
               bool &out) {
    const json::Value *v = get(obj, section, key);
    if (!v)
      return;
    std::optional<bool> b = v->getAsBoolean();
    if (!b)
      return expected(join(section, key), "true or false", describeValue(*v));
    out = *b;
  }

  /// One of `options`, spelled as `name` spells them.
  template <typename E>
  void choice(const json::Object &obj, StringRef section, StringRef key,
              E &out, std::initializer_list<E> options,
              StringRef (*name)(E)) {
    const json::Value *v = get(obj, section, key);
    if (!v)
      return;
    std::optional<StringRef> s = v->getAsString();
    std::string all;
    for (E o : options) {
      if (s && *s == name(o)) {
        out = o;
        return;
      }
      all += (all.empty() ? "" : " or ") + name(o).str();
    }
    expected(join(section, key), "one of " + all, describeValue(*v));
  }

  /// The section object, or null if absent or not an object (an error).
  const json::Object *section(const json::Object &root, StringRef name) {
    const json::Value *v = get(root, "", name);
    if (!v)
      return nullptr;
    const json::Object *obj = v->getAsObject();
    if (!obj)
      expected(name, "an object", describeValue(*v));
    return obj;
  }

private:
  std::string source;
  std::optional<std::string> error;
};

/// rope_scaling: null, or {"rope_type" (or "type"): "linear" | "dynamic",
/// "factor": >= 1}. Other types are refused by name rather than run as
/// something else.
void readRopeScaling(Reader &r, const json::Object &o, RopeScaling &out) {
  const json::Value *v = r.get(o, "", "rope_scaling");
  if (!v || v->getAsNull())
    return;
  const json::Object *obj = v->getAsObject();
  if (!obj)
    return r.expected("rope_scaling", "null or an object {\"rope_type\", \"factor\"}",
                      describeValue(*v));
  for (const auto &kv : *obj)
    if (!llvm::is_contained({"rope_type", "type", "factor"}, StringRef(kv.first)))
      return r.fail("rope_scaling." + StringRef(kv.first),
                    "unknown key (rope_scaling takes rope_type and factor)");
  const json::Value *type = obj->get("rope_type");
  if (!type)
    type = obj->get("type");
  std::optional<StringRef> name = type ? type->getAsString() : std::nullopt;
  if (!name)
    return r.fail("rope_scaling.rope_type",
                  std::string("required: one of ") + kRopeScalingTypes);
  std::optional<RopeScalingType> kind = parseRopeScalingType(name->str());
  if (!kind)
    return r.fail("rope_scaling.rope_type",
                  "'" + *name + "' is not supported (supported: " + kRopeScalingTypes +
                      "; a plain base change is rope_theta)");
  const json::Value *factor = obj->get("factor");
  std::optional<double> f = factor ? factor->getAsNumber() : std::nullopt;
  if (!f || !std::isfinite(*f) || *f < 1)
    return r.expected("rope_scaling.factor", "a number >= 1",
                      factor ? describeValue(*factor) : std::string("nothing"));
  out.type = *kind;
  out.factor = *f;
}

void readModel(Reader &r, const json::Object &o, ModelSpec &spec) {
  if (const json::Value *v = r.get(o, "", "name")) {
    std::optional<StringRef> s = v->getAsString();
    // The name may become part of file and symbol names.
    bool ok =
        s && !s->empty() && s->size() <= 64 && llvm::all_of(*s, [](char c) {
          return llvm::isAlnum(c) || c == '_' || c == '-' || c == '.';
        });
    if (!ok)
      r.expected("name", "a name of 1 to 64 letters, digits, '_', '-' or '.'",
                 describeValue(*v));
    else
      spec.name = s->str();
  }
  r.integer(o, "", "vocab_size", spec.vocabSize, 1, true);
  r.integer(o, "", "hidden_size", spec.hiddenSize, 1, true);
  r.integer(o, "", "num_hidden_layers", spec.numHiddenLayers, 1, true, kMaxLayers);
  r.integer(o, "", "num_attention_heads", spec.numAttentionHeads, 1, true);
  r.integer(o, "", "intermediate_size", spec.intermediateSize, 1, true);
  r.integer(o, "", "max_position_embeddings", spec.maxPositionEmbeddings, 1,
            true);
  r.number(o, "", "rms_norm_eps", spec.rmsNormEps, Reader::Range::Positive);
  r.number(o, "", "rope_theta", spec.ropeTheta, Reader::Range::Positive);
  readRopeScaling(r, o, spec.ropeScaling);
  r.boolean(o, "", "tie_word_embeddings", spec.tieWordEmbeddings);
  if (!r.failed() && !spec.tieWordEmbeddings)
    r.expected("tie_word_embeddings",
               "true (the FBT uses E as both embedding and LM head, so plain "
               "and fused inputs share one space)",
               "false");
  r.integer(o, "", "bos_token_id", spec.bosTokenId, 0);
}

void readFeedback(Reader &r, const json::Object &o, FeedbackSpec &fb) {
  StringRef s = "feedback";
  if (const json::Value *v = r.get(o, s, "fusion")) {
    std::optional<StringRef> name = v->getAsString();
    std::optional<Fusion> f;
    if (name)
      f = parseKind<Fusion>(std::string_view(name->data(), name->size()));
    if (!f)
      r.expected("feedback.fusion", "one of glu, add, concat, none",
                 describeValue(*v));
    else
      fb.fusion = *f;
  }
  r.number(o, s, "jitter", fb.jitter, Reader::Range::NonNegative);
  // depth_scaling: true = the default 1/sqrt(2L) (resolved later),
  // false = no scaling, or the scale itself.
  if (const json::Value *v = r.get(o, s, "depth_scaling")) {
    std::optional<bool> b = v->getAsBoolean();
    std::optional<double> d = v->getAsNumber();
    if (b)
      fb.depthScaling = *b ? 0 : 1.0;
    else if (d && std::isfinite(*d) && *d > 0)
      fb.depthScaling = *d;
    else
      r.expected("feedback.depth_scaling", "true, false or a number > 0",
                 describeValue(*v));
  }
  r.boolean(o, s, "detach_state", fb.detachState);
  r.number(o, s, "aux_loss_weight", fb.auxLossWeight,
           Reader::Range::NonNegative);
  r.boolean(o, s, "prefix_mixin", fb.prefixMixin);
  r.choice(o, s, "state", fb.state,
           {StateSource::PreNorm, StateSource::PostNorm}, stateSourceName);
  r.boolean(o, s, "input_norm", fb.inputNorm);
  r.boolean(o, s, "gate_norm", fb.gateNorm);
  r.boolean(o, s, "state_norm", fb.stateNorm);
  r.boolean(o, s, "output_norm", fb.outputNorm);
  r.boolean(o, s, "token_residual", fb.tokenResidual);
  r.choice(o, s, "init", fb.init, {FeedbackInit::Normal, FeedbackInit::Uniform},
           feedbackInitName);
  r.number(o, s, "init_std", fb.initStd, Reader::Range::Positive);
}

/// The keys of the fixed schedule (K2, K3, p3).
constexpr StringRef kFixedPassKeys[] = {"passes", "deep_passes",
                                        "deep_pass_fraction"};
/// The default distribution's largest K.
constexpr int64_t kDefaultMaxPasses = 8;

/// training.pass_distribution: {"K": weight, ...}, K >= 2, weights >= 0 and
/// not all zero; stored ascending in K, normalized to sum to 1.
void readPassDistribution(Reader &r, const json::Object &o, TrainingSpec &t) {
  const json::Value *v = r.get(o, "training", "pass_distribution");
  if (!v)
    return;
  const json::Object *obj = v->getAsObject();
  if (!obj || obj->empty())
    return r.expected("training.pass_distribution",
                      "an object of K (an integer >= 2, as a string) to a "
                      "weight >= 0, e.g. {\"2\": 0.5, \"8\": 0.5}",
                      describeValue(*v));
  double total = 0;
  for (const auto &kv : *obj) {
    std::string path = "training.pass_distribution." + displayKey(kv.first);
    int64_t k = 0;
    if (StringRef(kv.first).getAsInteger(10, k) || k < 2)
      return r.fail(path, "expected a pass count K, an integer >= 2");
    std::optional<double> w = kv.second.getAsNumber();
    if (!w || !std::isfinite(*w) || *w < 0)
      return r.expected(path, "a weight >= 0", describeValue(kv.second));
    t.passDistribution.push_back({k, *w});
    total += *w;
  }
  if (total <= 0)
    return r.fail("training.pass_distribution",
                  "expected at least one weight > 0");
  llvm::sort(t.passDistribution);
  // Weights that already sum to 1 (to rounding) stay as given, so the
  // resolved spec parses back to itself.
  if (std::fabs(total - 1) > 1e-12)
    for (auto &kw : t.passDistribution)
      kw.second /= total;
}

void readTraining(Reader &r, const json::Object &o, TrainingSpec &t) {
  using Range = Reader::Range;
  StringRef s = "training";
  r.number(o, s, "single_pass_fraction", t.singlePassFraction, Range::Fraction);
  r.integer(o, s, "passes", t.passes, 1);
  r.number(o, s, "deep_pass_fraction", t.deepPassFraction, Range::Fraction);
  r.integer(o, s, "deep_passes", t.deepPasses, 1);
  readPassDistribution(r, o, t);
  if (!r.failed() && !t.passDistribution.empty())
    for (StringRef key : kFixedPassKeys)
      if (o.get(key))
        return r.fail("training." + key.str(),
                      "not allowed with training.pass_distribution, which "
                      "gives the multi-pass phase's K");
  r.integer(o, s, "grad_passes", t.gradPasses, 0);
  r.integer(o, s, "batch_size", t.batchSize, 1);
  r.integer(o, s, "sequence_length", t.sequenceLength, 1);
  r.integer(o, s, "steps", t.steps, 1);
  r.number(o, s, "learning_rate", t.learningRate, Range::Positive);
  r.number(o, s, "beta1", t.beta1, Range::HalfOpenFraction);
  r.number(o, s, "beta2", t.beta2, Range::HalfOpenFraction);
  r.number(o, s, "adam_epsilon", t.adamEpsilon, Range::Positive);
  r.number(o, s, "weight_decay", t.weightDecay, Range::NonNegative);
  r.integer(o, s, "warmup_steps", t.warmupSteps, 0);
  r.number(o, s, "min_learning_rate", t.minLearningRate, Range::NonNegative);
  // 0 turns clipping off.
  r.number(o, s, "grad_clip", t.gradClip, Range::NonNegative);
  r.unsignedInteger(o, s, "seed", t.seed);
  r.integer(o, s, "zero", t.zero, 0);
  if (t.zero > 1)
    r.expected("training.zero", "0 or 1 (ZeRO-1 shards the optimizer state)", Twine(t.zero));
}

/// Rules between fields, checked once every field has its value.
void checkConsistency(Reader &r, const ModelSpec &spec) {
  const int64_t d = spec.hiddenSize, h = spec.numAttentionHeads;
  if (d % h != 0)
    return r.expected("num_attention_heads",
                      "a divisor of hidden_size (" + Twine(d) + ")", Twine(h));
  if (spec.headDim() % 2 != 0)
    return r.expected("num_attention_heads",
                      "an even head dimension hidden_size / "
                      "num_attention_heads (RoPE rotates pairs)",
                      Twine(d) + " / " + Twine(h) + " = " +
                          Twine(spec.headDim()));
  if (spec.ropeScaling.type == RopeScalingType::Dynamic && spec.headDim() <= 2)
    return r.fail("rope_scaling.rope_type",
                  "'dynamic' needs a head dimension above 2 (its base grows by a "
                  "power d / (d - 2)), got " + Twine(spec.headDim()));
  if (spec.bosTokenId >= spec.vocabSize)
    return r.expected("bos_token_id",
                      "a token id below vocab_size (" + Twine(spec.vocabSize) +
                          ")",
                      Twine(spec.bosTokenId));

  const TrainingSpec &t = spec.training;
  if (t.deepPasses < t.passes)
    return r.expected("training.deep_passes",
                      "an integer >= training.passes (" + Twine(t.passes) + ")",
                      Twine(t.deepPasses));
  if (t.sequenceLength > spec.maxPositionEmbeddings)
    return r.expected("training.sequence_length",
                      "at most max_position_embeddings (" +
                          Twine(spec.maxPositionEmbeddings) + ")",
                      Twine(t.sequenceLength));
  if (t.warmupSteps > t.steps)
    return r.expected("training.warmup_steps",
                      "at most training.steps (" + Twine(t.steps) + ")",
                      Twine(t.warmupSteps));
  if (t.minLearningRate > t.learningRate)
    return r.expected("training.min_learning_rate",
                      "at most training.learning_rate (" +
                          formatDouble(t.learningRate) + ")",
                      formatDouble(t.minLearningRate));

  const InferenceSpec &inf = spec.inference;
  if (inf.maxSequenceLength > spec.maxPositionEmbeddings)
    return r.expected("inference.max_sequence_length",
                      "at most max_position_embeddings (" +
                          Twine(spec.maxPositionEmbeddings) + ")",
                      Twine(inf.maxSequenceLength));
  if (inf.maxPromptLength > inf.maxSequenceLength)
    return r.expected("inference.max_prompt_length",
                      "at most inference.max_sequence_length (" +
                          Twine(inf.maxSequenceLength) + ")",
                      Twine(inf.maxPromptLength));
}

} // namespace

namespace {
/// 1. The bytes: text, UTF-8, not empty, not nested past kMaxNesting.
/// Strips a byte-order mark. False (with the failure in `r`) if not.
bool checkBytes(Reader &r, StringRef &text, TextScan &scan) {
  if (size_t nul = text.find('\0'); nul != StringRef::npos) {
    r.failRoot("not a JSON text file (NUL byte at offset " + Twine(nul) + ")");
    return false;
  }
  if (size_t bad; !json::isUTF8(text, &bad)) {
    r.failRoot("not a JSON text file (invalid UTF-8 at offset " + Twine(bad) + ")");
    return false;
  }
  text.consume_front("\xEF\xBB\xBF"); // a UTF-8 byte-order mark
  if (text.trim().empty()) {
    r.failRoot("expected a JSON object, got an empty file");
    return false;
  }
  scan = scanText(text);
  if (scan.tooDeepAt) {
    auto [line, column] = lineColumn(text, *scan.tooDeepAt);
    r.failAt(Twine(line) + ":" + Twine(column),
             "expected at most " + Twine(kMaxNesting) + " nested arrays or objects, got more");
    return false;
  }
  return true;
}

/// 2. The syntax: one JSON object without duplicate keys. llvm::json
/// reports "[line:column, byte=N]: Message".
std::optional<json::Value> parseSyntax(Reader &r, StringRef text, const TextScan &scan) {
  llvm::Expected<json::Value> root = json::parse(text);
  if (!root) {
    std::string log = llvm::toString(root.takeError());
    StringRef message = log, position;
    if (message.consume_front("["))
      std::tie(position, message) = message.split("]: ");
    std::string what = message.str();
    if (!what.empty())
      what[0] = llvm::toLower(what[0]);
    if (position.empty())
      r.failRoot("invalid JSON: " + what);
    else
      r.failAt(position.split(',').first, "invalid JSON: " + what);
    return std::nullopt;
  }
  if (scan.duplicatePath) {
    r.fail(*scan.duplicatePath,
           "duplicate key (lines " + Twine(lineColumn(text, scan.firstOffset).first) +
               " and " + Twine(lineColumn(text, scan.duplicateOffset).first) + ")");
    return std::nullopt;
  }
  if (!root->getAsObject()) {
    r.failRoot("expected a JSON object, got " + describeValue(*root));
    return std::nullopt;
  }
  return std::move(*root);
}

/// Defaults that depend on other fields (`training` and `inference` are
/// the spec's sections as written, to tell a given key from a default).
void resolveDefaults(ModelSpec &spec, const json::Object &training,
                     const json::Object &inference) {
  InferenceSpec &inf = spec.inference;
  if (spec.feedback.depthScaling == 0)
    spec.feedback.depthScaling = 1.0 / std::sqrt(2.0 * double(spec.numHiddenLayers));
  if (spec.feedback.initStd == 0)
    spec.feedback.initStd = spec.feedback.init == FeedbackInit::Uniform
                                ? 1.0 / std::sqrt(double(spec.hiddenSize))
                                : 0.02;
  if (!inference.get("max_sequence_length"))
    inf.maxSequenceLength = spec.maxPositionEmbeddings;
  // The training length, unless that exceeds the cache (then the cache).
  if (!inference.get("max_prompt_length"))
    inf.maxPromptLength = std::min(spec.training.sequenceLength, inf.maxSequenceLength);
  // One deeper than the main K, so giving only `passes` stays consistent.
  // (At INT64_MAX passes the overflow check below names the field.)
  if (!training.get("deep_passes"))
    spec.training.deepPasses =
        spec.training.passes == INT64_MAX ? INT64_MAX : spec.training.passes + 1;
  // No K given at all: the recipe's. fbt's measured default is K uniform
  // over 2..8; the paper's K = 2 and 3 at 22 : 3.
  if (spec.training.passDistribution.empty() &&
      llvm::none_of(kFixedPassKeys, [&](StringRef key) { return training.get(key); })) {
    if (spec.recipe == Recipe::Paper)
      spec.training.passDistribution = {{2, 22.0 / 25.0}, {3, 3.0 / 25.0}};
    else
      for (int64_t k = 2; k <= kDefaultMaxPasses; ++k)
        spec.training.passDistribution.push_back({k, 1.0 / double(kDefaultMaxPasses - 1)});
  }
}
} // namespace

llvm::Expected<ModelSpec> fbt::readSpec(StringRef text, StringRef source,
                                        std::optional<Recipe> recipe) {
  Reader r(source);
  TextScan scan;
  if (!checkBytes(r, text, scan))
    return r.takeError();
  std::optional<json::Value> root = parseSyntax(r, text, scan);
  if (!root)
    return r.takeError();
  const json::Object &top = *root->getAsObject();

  // 3. Unknown keys, everywhere, before any field is read.
  ModelSpec spec;
  r.checkKeys(top, "", kTopKeys);
  const json::Object *sections[3];
  for (auto [i, s] : llvm::enumerate(kSections)) {
    sections[i] = r.section(top, s.name);
    if (sections[i])
      r.checkKeys(*sections[i], s.name, s.keys);
  }

  // 4. Fields, then the defaults that depend on them.
  static const json::Object empty;
  const json::Object &feedback = sections[0] ? *sections[0] : empty;
  const json::Object &training = sections[1] ? *sections[1] : empty;
  const json::Object &inference = sections[2] ? *sections[2] : empty;
  // The recipe first: its defaults are what the sections' keys override.
  if (const json::Value *v = top.get("recipe")) {
    std::optional<StringRef> name = v->getAsString();
    std::optional<Recipe> given = name ? parseRecipe(*name) : std::nullopt;
    if (!given)
      r.expected("recipe", "fbt or paper", describeValue(*v));
    else
      spec.recipe = *given;
  }
  if (recipe)
    spec.recipe = *recipe;
  applyRecipe(spec.recipe, spec.feedback, spec.training);
  readModel(r, top, spec);
  readFeedback(r, feedback, spec.feedback);
  readTraining(r, training, spec.training);
  InferenceSpec &inf = spec.inference;
  r.integer(inference, "inference", "batch_size", inf.batchSize, 1);
  r.integer(inference, "inference", "max_prompt_length", inf.maxPromptLength, 1);
  r.integer(inference, "inference", "max_sequence_length", inf.maxSequenceLength, 1);
  r.choice(inference, "inference", "weights", inf.weights,
           {WeightForm::F32, WeightForm::BF16, WeightForm::Int8},
           +[](WeightForm w) { return StringRef(kindName(w)); });
  r.choice(inference, "inference", "activations", inf.activations,
           {WeightForm::F32, WeightForm::Int8},
           +[](WeightForm w) { return StringRef(kindName(w)); });
  r.choice(inference, "inference", "kv_cache", inf.kvCache, {CacheForm::F32, CacheForm::F16},
           +[](CacheForm c) { return StringRef(kindName(c)); });
  if (r.failed())
    return r.takeError();
  resolveDefaults(spec, training, inference);

  // 5. Consistency.
  checkConsistency(r, spec);
  if (r.failed())
    return r.takeError();
  return spec;
}
