//===- SpecTest.cpp - Model spec parsing and validation -------------------===//
//
// Each error case edits one field of the tiny preset and checks the exact
// one-line message, so a change in wording is a deliberate test change.
//
//===----------------------------------------------------------------------===//

#include "frontend/LoadSpec.h"
#include "frontend/Spec.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <cmath>
#include <string>

#ifndef FBT_SOURCE_DIR
#error "FBT_SOURCE_DIR (the source root) is set by test/unit/CMakeLists.txt"
#endif

using namespace fbt;
namespace json = llvm::json;

namespace {

std::string presetPath(llvm::StringRef name) {
  return (llvm::Twine(FBT_SOURCE_DIR) + "/specs/" + name + ".json").str();
}

/// The tiny preset with the fixed K schedule (K=2, 3% at K=3) in place of
/// its pass distribution, so the error cases can edit those fields too.
json::Object tinyObject() {
  auto buffer = llvm::MemoryBuffer::getFile(presetPath("tiny"));
  EXPECT_TRUE(bool(buffer));
  llvm::Expected<json::Value> v = json::parse((*buffer)->getBuffer());
  EXPECT_TRUE(bool(v));
  json::Object o = std::move(*v->getAsObject());
  json::Object *t = o.getObject("training");
  t->erase("pass_distribution");
  (*t)["passes"] = 2;
  (*t)["deep_pass_fraction"] = 0.03;
  (*t)["deep_passes"] = 3;
  return o;
}

/// The object holding `path`'s last component ("training.passes" ->
/// the training section), and that component.
std::pair<json::Object *, std::string> locate(json::Object &root,
                                              llvm::StringRef path) {
  auto [first, rest] = path.split('.');
  if (rest.empty())
    return {&root, first.str()};
  return {root.getObject(first), rest.str()};
}

std::string text(const json::Object &o) {
  return llvm::formatv("{0:2}", json::Value(json::Object(o))).str();
}

/// The tiny preset with `path` set to `value`, as JSON text.
std::string with(llvm::StringRef path, json::Value value) {
  json::Object o = tinyObject();
  auto [obj, key] = locate(o, path);
  (*obj)[key] = std::move(value);
  return text(o);
}

/// The tiny preset without `path`.
std::string without(llvm::StringRef path) {
  json::Object o = tinyObject();
  auto [obj, key] = locate(o, path);
  obj->erase(key);
  return text(o);
}

/// The error parseSpec gives for `json`, or "" if it parses.
std::string errorOf(llvm::StringRef json) {
  llvm::Expected<ModelSpec> spec = parseSpec(json, "tiny.json");
  if (spec)
    return "";
  return llvm::toString(spec.takeError());
}

ModelSpec parseOk(llvm::StringRef json) {
  llvm::Expected<ModelSpec> spec = parseSpec(json, "tiny.json");
  if (!spec) {
    ADD_FAILURE() << llvm::toString(spec.takeError());
    return ModelSpec();
  }
  return *spec;
}

const char *kMinimal = R"({"vocab_size": 256, "hidden_size": 64,
  "num_hidden_layers": 2, "num_attention_heads": 4,
  "intermediate_size": 172, "max_position_embeddings": 256})";

//===----------------------------------------------------------------------===//
// Presets and defaults
//===----------------------------------------------------------------------===//

TEST(SpecTest, PresetsLoad) {
  for (const char *name : {"tiny", "small", "124m", "1b"}) {
    llvm::Expected<ModelSpec> spec = loadSpec(presetPath(name));
    ASSERT_TRUE(bool(spec)) << llvm::toString(spec.takeError());
    EXPECT_EQ(spec->name, name);
    EXPECT_TRUE(spec->tieWordEmbeddings);
    EXPECT_EQ(spec->hiddenSize % spec->numAttentionHeads, 0);
  }
}

TEST(SpecTest, TinyPresetValues) {
  ModelSpec s = *loadSpec(presetPath("tiny"));
  EXPECT_EQ(s.vocabSize, 256);
  EXPECT_EQ(s.hiddenSize, 64);
  EXPECT_EQ(s.numHiddenLayers, 2);
  EXPECT_EQ(s.numAttentionHeads, 4);
  EXPECT_EQ(s.headDim(), 16);
  EXPECT_EQ(s.intermediateSize, 172);
  EXPECT_EQ(s.maxPositionEmbeddings, 256);
  EXPECT_EQ(s.bosTokenId, 0);
  EXPECT_EQ(s.feedback.fusion, Fusion::Glu);
  EXPECT_DOUBLE_EQ(s.feedback.depthScaling, 0.5); // 1/sqrt(2*2)
  EXPECT_EQ(s.training.batchSize, 8);
  EXPECT_EQ(s.training.sequenceLength, 64);
  EXPECT_EQ(s.inference.maxPromptLength, 64);
  EXPECT_EQ(s.inference.maxSequenceLength, 256);
}

TEST(SpecTest, GptScalePresetValues) {
  ModelSpec s = *loadSpec(presetPath("124m"));
  EXPECT_EQ(s.vocabSize, 50304);
  EXPECT_EQ(s.hiddenSize, 768);
  EXPECT_EQ(s.numHiddenLayers, 12);
  EXPECT_EQ(s.intermediateSize, 2048);
  EXPECT_EQ(s.training.sequenceLength, 1024);
}

TEST(SpecTest, Defaults) {
  ModelSpec s = parseOk(kMinimal);
  ModelSpec d; // the declared defaults
  EXPECT_EQ(s.name, "fbt");
  EXPECT_EQ(s.rmsNormEps, 1e-5);
  EXPECT_EQ(s.ropeTheta, 10000.0);
  EXPECT_TRUE(s.tieWordEmbeddings);
  EXPECT_EQ(s.bosTokenId, 0);
  EXPECT_EQ(s.feedback.fusion, Fusion::Glu);
  EXPECT_EQ(s.feedback.jitter, 0.02);
  EXPECT_DOUBLE_EQ(s.feedback.depthScaling, 1 / std::sqrt(4.0));
  EXPECT_FALSE(s.feedback.detachState);
  EXPECT_EQ(s.feedback.auxLossWeight, 1.0);
  EXPECT_FALSE(s.feedback.prefixMixin);
  // The recipe measured with fbt eval: e + (W_U s) * sigmoid(W_G norm(e)),
  // the post-norm state, N(0, 0.02) feedback init.
  EXPECT_EQ(s.feedback.state, StateSource::PostNorm);
  EXPECT_FALSE(s.feedback.inputNorm);
  EXPECT_TRUE(s.feedback.gateNorm);
  EXPECT_FALSE(s.feedback.stateNorm);
  EXPECT_FALSE(s.feedback.outputNorm);
  EXPECT_TRUE(s.feedback.tokenResidual);
  EXPECT_EQ(s.feedback.init, FeedbackInit::Normal);
  EXPECT_DOUBLE_EQ(s.feedback.initStd, 0.02);
  EXPECT_EQ(s.training.singlePassFraction, 0.25);
  // No K given: K uniform over 2..8, gradients through the last two.
  ASSERT_EQ(s.training.passDistribution.size(), 7u);
  EXPECT_EQ(s.training.passDistribution.front().first, 2);
  EXPECT_EQ(s.training.passDistribution.back().first, 8);
  EXPECT_DOUBLE_EQ(s.training.passDistribution.back().second, 1.0 / 7);
  EXPECT_EQ(s.training.gradPasses, 2);
  EXPECT_EQ(s.scheduledPasses(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(s.training.batchSize, d.training.batchSize);
  EXPECT_EQ(s.training.sequenceLength, d.training.sequenceLength);
  EXPECT_EQ(s.training.learningRate, d.training.learningRate);
  EXPECT_EQ(s.training.seed, d.training.seed);
  EXPECT_EQ(s.inference.batchSize, 1);
  EXPECT_EQ(s.inference.maxPromptLength, s.training.sequenceLength);
  EXPECT_EQ(s.inference.maxSequenceLength, 256);
}

TEST(SpecTest, DeepPassesDefaultFollowsPasses) {
  EXPECT_EQ(parseOk(without("training.deep_passes")).training.deepPasses, 3);
  json::Object o = tinyObject();
  o.getObject("training")->erase("deep_passes");
  (*o.getObject("training"))["passes"] = 4;
  EXPECT_EQ(parseOk(text(o)).training.deepPasses, 5);
}

TEST(SpecTest, PromptDefaultIsCappedByTheCache) {
  json::Object o = tinyObject();
  o.getObject("inference")->erase("max_prompt_length");
  (*o.getObject("inference"))["max_sequence_length"] = 32;
  ModelSpec s = parseOk(text(o));
  EXPECT_EQ(s.inference.maxPromptLength, 32);
}

TEST(SpecTest, DepthScaling) {
  EXPECT_DOUBLE_EQ(
      parseOk(with("feedback.depth_scaling", true)).feedback.depthScaling, 0.5);
  EXPECT_EQ(
      parseOk(with("feedback.depth_scaling", false)).feedback.depthScaling,
      1.0);
  EXPECT_EQ(parseOk(with("feedback.depth_scaling", 0.3)).feedback.depthScaling,
            0.3);
  EXPECT_EQ(errorOf(with("feedback.depth_scaling", 0)),
            "tiny.json: feedback.depth_scaling: expected true, false or a "
            "number > 0, got 0");
}

TEST(SpecTest, IntegersMayBeWrittenAsIntegralNumbers) {
  EXPECT_EQ(parseOk(with("hidden_size", 64.0)).hiddenSize, 64);
  EXPECT_EQ(parseOk(R"({"vocab_size": 256, "hidden_size": 6.4e1,
    "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 172, "max_position_embeddings": 256})")
                .hiddenSize,
            64);
  EXPECT_EQ(
      parseOk(with("training.seed", json::Value(UINT64_MAX))).training.seed,
      UINT64_MAX);
}

TEST(SpecTest, FusionNames) {
  for (Fusion f : {Fusion::Glu, Fusion::Add, Fusion::Concat, Fusion::None})
    EXPECT_EQ(parseOk(with("feedback.fusion", kindName(f))).feedback.fusion,
              f);
}

TEST(SpecTest, ByteOrderMarkIsSkipped) {
  EXPECT_EQ(parseOk(std::string("\xEF\xBB\xBF") + kMinimal).hiddenSize, 64);
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST(SpecErrorTest, UnknownKeys) {
  json::Object o = tinyObject();
  (*o.getObject("training"))["learnig_rate"] =
      std::move(*o.getObject("training")->get("learning_rate"));
  o.getObject("training")->erase("learning_rate");
  EXPECT_EQ(errorOf(text(o)), "tiny.json: training.learnig_rate: unknown key "
                              "(did you mean learning_rate?)");
  EXPECT_EQ(errorOf(with("hiden_size", 64)),
            "tiny.json: hiden_size: unknown key (did you mean hidden_size?)");
  EXPECT_EQ(errorOf(with("Hidden_Size", 64)),
            "tiny.json: Hidden_Size: unknown key (did you mean hidden_size?)");
  EXPECT_EQ(errorOf(with("frobnicate", 1)),
            "tiny.json: frobnicate: unknown key");
  EXPECT_EQ(errorOf(with("n_layer", 2)),
            "tiny.json: n_layer: unknown key (did you mean "
            "num_hidden_layers?)");
  EXPECT_EQ(errorOf(with("training.lr", 1)),
            "tiny.json: training.lr: unknown key (did you mean "
            "learning_rate?)");
}

TEST(SpecErrorTest, OddKeysAreQuoted) {
  // A key could otherwise break the one-line message or fake a path.
  EXPECT_EQ(errorOf(with("inference.max_seq\nlength", 1)),
            "tiny.json: inference.\"max_seq\\nlength\": unknown key (did "
            "you mean max_sequence_length?)");
  EXPECT_EQ(errorOf(with("training.passes", json::Object{})),
            "tiny.json: training.passes: expected an integer >= 1, got an "
            "object");
  json::Object o = tinyObject();
  o["a.b"] = 1;
  EXPECT_EQ(errorOf(text(o)), "tiny.json: \"a.b\": unknown key");
  o.erase("a.b");
  o[""] = 1;
  EXPECT_EQ(errorOf(text(o)), "tiny.json: \"\": unknown key");
}

TEST(SpecErrorTest, KeysInTheWrongSection) {
  EXPECT_EQ(errorOf(with("feedback.passes", 2)),
            "tiny.json: feedback.passes: unknown key (did you mean "
            "training.passes?)");
  EXPECT_EQ(errorOf(with("fusion", "glu")),
            "tiny.json: fusion: unknown key (did you mean feedback.fusion?)");
  EXPECT_EQ(errorOf(with("training.hidden_size", 64)),
            "tiny.json: training.hidden_size: unknown key (did you mean the "
            "top-level hidden_size?)");
}

TEST(SpecErrorTest, UnknownKeysComeBeforeOtherErrors) {
  // The typo is why hidden_size is missing; say so first.
  json::Object o = tinyObject();
  o.erase("hidden_size");
  o["hidden_sise"] = 64;
  EXPECT_EQ(errorOf(text(o)),
            "tiny.json: hidden_sise: unknown key (did you mean hidden_size?)");
}

TEST(SpecErrorTest, WrongTypes) {
  EXPECT_EQ(errorOf(with("hidden_size", "64")),
            "tiny.json: hidden_size: expected an integer >= 1, got \"64\"");
  EXPECT_EQ(errorOf(with("num_hidden_layers", 2.5)),
            "tiny.json: num_hidden_layers: expected an integer in [1, 1024], got 2.5");
  EXPECT_EQ(errorOf(with("vocab_size", nullptr)),
            "tiny.json: vocab_size: expected an integer >= 1, got null");
  EXPECT_EQ(errorOf(with("feedback.detach_state", "yes")),
            "tiny.json: feedback.detach_state: expected true or false, got "
            "\"yes\"");
  EXPECT_EQ(errorOf(with("feedback.fusion", "gru")),
            "tiny.json: feedback.fusion: expected one of glu, add, concat, "
            "none, got \"gru\"");
  EXPECT_EQ(errorOf(with("feedback.fusion", json::Array{1})),
            "tiny.json: feedback.fusion: expected one of glu, add, concat, "
            "none, got an array");
  EXPECT_EQ(errorOf(with("training", 5)),
            "tiny.json: training: expected an object, got 5");
  EXPECT_EQ(errorOf(with("name", "has space")),
            "tiny.json: name: expected a name of 1 to 64 letters, digits, "
            "'_', '-' or '.', got \"has space\"");
  EXPECT_EQ(errorOf(with("training.learning_rate", "1e-3")),
            "tiny.json: training.learning_rate: expected a number > 0, got "
            "\"1e-3\"");
}

TEST(SpecErrorTest, LongStringsAreShortened) {
  EXPECT_EQ(errorOf(with("feedback.fusion", std::string(100, 'x'))),
            "tiny.json: feedback.fusion: expected one of glu, add, concat, "
            "none, got \"" +
                std::string(40, 'x') + "...\"");
}

TEST(SpecErrorTest, MissingRequiredFields) {
  for (const char *key :
       {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
        "intermediate_size", "max_position_embeddings"})
    EXPECT_EQ(errorOf(without(key)),
              std::string("tiny.json: ") + key + ": required field is missing");
}

TEST(SpecErrorTest, OutOfRange) {
  EXPECT_EQ(errorOf(with("training.passes", 0)),
            "tiny.json: training.passes: expected an integer >= 1, got 0");
  EXPECT_EQ(errorOf(with("vocab_size", -3)),
            "tiny.json: vocab_size: expected an integer >= 1, got -3");
  EXPECT_EQ(errorOf(with("training.single_pass_fraction", 1.5)),
            "tiny.json: training.single_pass_fraction: expected a number in "
            "[0, 1], got 1.5");
  EXPECT_EQ(errorOf(with("training.deep_pass_fraction", -0.1)),
            "tiny.json: training.deep_pass_fraction: expected a number in "
            "[0, 1], got -0.1");
  EXPECT_EQ(errorOf(with("training.beta2", 1)),
            "tiny.json: training.beta2: expected a number in [0, 1), got 1");
  EXPECT_EQ(errorOf(with("feedback.jitter", -0.02)),
            "tiny.json: feedback.jitter: expected a number >= 0, got -0.02");
  EXPECT_EQ(errorOf(with("training.learning_rate", 0)),
            "tiny.json: training.learning_rate: expected a number > 0, got 0");
  EXPECT_EQ(errorOf(with("training.seed", -1)),
            "tiny.json: training.seed: expected an integer in [0, 2^64), got "
            "-1");
  EXPECT_EQ(errorOf(with("training.warmup_steps", -1)),
            "tiny.json: training.warmup_steps: expected an integer >= 0, got "
            "-1");
  // Past int64 but still an integer: shown exactly.
  EXPECT_EQ(errorOf(with("hidden_size", json::Value(UINT64_MAX))),
            "tiny.json: hidden_size: expected an integer >= 1, got "
            "18446744073709551615");
  // 2^63 is just outside int64, written as an integer or as a double.
  EXPECT_EQ(errorOf(with("hidden_size", uint64_t(1) << 63)),
            "tiny.json: hidden_size: expected an integer >= 1, got "
            "9223372036854775808");
  EXPECT_EQ(errorOf(with("hidden_size", 0x1p63)),
            "tiny.json: hidden_size: expected an integer >= 1, got "
            "9.223372036854776e+18");
}

TEST(SpecErrorTest, NumbersBeyondDouble) {
  json::Object o = tinyObject();
  std::string t = text(o);
  size_t at = t.find("\"jitter\": 0.02");
  ASSERT_NE(at, std::string::npos);
  t.replace(at, 14, "\"jitter\": 1e999");
  EXPECT_EQ(errorOf(t), "tiny.json: feedback.jitter: expected a number >= "
                        "0, got a number beyond the double range");
}

TEST(SpecErrorTest, Inconsistent) {
  EXPECT_EQ(errorOf(with("num_attention_heads", 5)),
            "tiny.json: num_attention_heads: expected a divisor of "
            "hidden_size (64), got 5");
  json::Object o = tinyObject();
  o["hidden_size"] = 96;
  o["num_attention_heads"] = 32;
  EXPECT_EQ(errorOf(text(o)),
            "tiny.json: num_attention_heads: expected an even head dimension "
            "hidden_size / num_attention_heads (RoPE rotates pairs), got "
            "96 / 32 = 3");
  EXPECT_EQ(errorOf(with("tie_word_embeddings", false)),
            "tiny.json: tie_word_embeddings: expected true (the FBT uses E as "
            "both embedding and LM head, so plain and fused inputs share one "
            "space), got false");
  EXPECT_EQ(errorOf(with("bos_token_id", 256)),
            "tiny.json: bos_token_id: expected a token id below vocab_size "
            "(256), got 256");
  EXPECT_EQ(errorOf(with("training.deep_passes", 1)),
            "tiny.json: training.deep_passes: expected an integer >= "
            "training.passes (2), got 1");
  EXPECT_EQ(errorOf(with("training.sequence_length", 512)),
            "tiny.json: training.sequence_length: expected at most "
            "max_position_embeddings (256), got 512");
  EXPECT_EQ(errorOf(with("training.warmup_steps", 201)),
            "tiny.json: training.warmup_steps: expected at most "
            "training.steps (200), got 201");
  EXPECT_EQ(errorOf(with("training.min_learning_rate", 0.01)),
            "tiny.json: training.min_learning_rate: expected at most "
            "training.learning_rate (0.001), got 0.01");
  EXPECT_EQ(errorOf(with("inference.max_sequence_length", 512)),
            "tiny.json: inference.max_sequence_length: expected at most "
            "max_position_embeddings (256), got 512");
  EXPECT_EQ(errorOf(with("inference.max_prompt_length", 300)),
            "tiny.json: inference.max_prompt_length: expected at most "
            "inference.max_sequence_length (256), got 300");
}

TEST(SpecErrorTest, Overflow) {
  EXPECT_EQ(errorOf(with("hidden_size", int64_t(1) << 32)),
            "tiny.json: hidden_size: expected a smaller value (the shared "
            "parameter count would exceed 64 bits), got 4294967296");
  EXPECT_EQ(errorOf(with("vocab_size", int64_t(1) << 60)),
            "tiny.json: vocab_size: expected a smaller value (the shared "
            "parameter count would exceed 64 bits), got 1152921504606846976");
  EXPECT_EQ(errorOf(with("training.batch_size", int64_t(1) << 50)),
            "tiny.json: training.batch_size: expected a smaller value (the "
            "activation bytes at K=1 would exceed 64 bits), got "
            "1125899906842624");
  // The cache length defaults to max_position_embeddings: blame that.
  json::Object o = tinyObject();
  o["max_position_embeddings"] = int64_t(1) << 55;
  o.getObject("inference")->erase("max_sequence_length");
  EXPECT_EQ(errorOf(text(o)),
            "tiny.json: max_position_embeddings: expected a smaller value "
            "(the KV-cache bytes would exceed 64 bits), got 36028797018963968");
  EXPECT_EQ(errorOf(with("training.deep_passes", int64_t(1) << 62)),
            "tiny.json: training.deep_passes: expected a smaller value (the "
            "training FLOPs per token at K=4611686018427387904 would exceed "
            "64 bits), got 4611686018427387904");
}

TEST(SpecErrorTest, HugePassesWithDefaultDeepPasses) {
  json::Object o = tinyObject();
  o.getObject("training")->erase("deep_passes");
  (*o.getObject("training"))["passes"] = INT64_MAX;
  EXPECT_EQ(errorOf(text(o)),
            "tiny.json: training.passes: expected a smaller value (the "
            "training FLOPs per token at K=9223372036854775807 would exceed "
            "64 bits), got 9223372036854775807");
}

TEST(SpecErrorTest, Syntax) {
  EXPECT_EQ(errorOf("{\n  \"hidden_size\": 64\n  \"vocab_size\": 256\n}"),
            "tiny.json:3:3: invalid JSON: expected , or } after object "
            "property");
  EXPECT_EQ(errorOf("{\"a\": tru}"),
            "tiny.json:1:10: invalid JSON: invalid JSON value (true?)");
  EXPECT_EQ(errorOf("[1, 2"),
            "tiny.json:1:5: invalid JSON: expected , or ] after array "
            "element");
  EXPECT_EQ(errorOf("[1]"), "tiny.json: expected a JSON object, got an array");
  EXPECT_EQ(errorOf("\"spec\""),
            "tiny.json: expected a JSON object, got \"spec\"");
}

TEST(SpecErrorTest, DuplicateKeys) {
  EXPECT_EQ(errorOf("{\"hidden_size\": 64,\n \"hidden_size\": 128}"),
            "tiny.json: hidden_size: duplicate key (lines 1 and 2)");
  EXPECT_EQ(errorOf("{\"training\": {\"passes\": 2,\n\n \"pa\\u0073ses\": 3}}"),
            "tiny.json: training.passes: duplicate key (lines 1 and 3)");
  // The same key in different objects is fine (then other errors follow).
  EXPECT_EQ(errorOf("{\"feedback\": {\"x\": 1}, \"training\": {\"x\": 1}}"),
            "tiny.json: feedback.x: unknown key");
}

TEST(SpecErrorTest, NotAJsonText) {
  EXPECT_EQ(errorOf(""), "tiny.json: expected a JSON object, got an empty "
                         "file");
  EXPECT_EQ(errorOf(" \n\t\n"),
            "tiny.json: expected a JSON object, got an empty file");
  const char elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 0, 0};
  EXPECT_EQ(errorOf(llvm::StringRef(elf, sizeof(elf))),
            "tiny.json: not a JSON text file (NUL byte at offset 6)");
  EXPECT_EQ(errorOf("{\"name\": \"caf\xe9\"}"),
            "tiny.json: not a JSON text file (invalid UTF-8 at offset 13)");
}

TEST(SpecErrorTest, DeepNesting) {
  std::string deep = "{\"name\": " + std::string(100000, '[');
  EXPECT_EQ(errorOf(deep), "tiny.json:1:41: expected at most 32 nested "
                           "arrays or objects, got more");
  // Brackets inside strings do not count.
  EXPECT_EQ(errorOf("{\"name\": \"" + std::string(100, '[') + "\"}"),
            "tiny.json: name: expected a name of 1 to 64 letters, digits, "
            "'_', '-' or '.', got \"" +
                std::string(40, '[') + "...\"");
}

TEST(SpecErrorTest, MissingFile) {
  llvm::Expected<ModelSpec> spec = loadSpec("no-such-spec.json");
  ASSERT_FALSE(bool(spec));
  EXPECT_EQ(llvm::toString(spec.takeError()),
            "cannot open 'no-such-spec.json': No such file or directory");
}

//===----------------------------------------------------------------------===//
// Schedule
//===----------------------------------------------------------------------===//

TEST(SpecTest, ScheduledPasses) {
  using V = std::vector<int64_t>;
  ModelSpec s; // defaults: f=0.5, K=2, p3=0.03 at K=3
  EXPECT_EQ(s.scheduledPasses(), (V{1, 2, 3}));
  s.training.deepPassFraction = 0;
  EXPECT_EQ(s.scheduledPasses(), (V{1, 2}));
  s.training.deepPassFraction = 1; // every multi-pass batch is deep
  EXPECT_EQ(s.scheduledPasses(), (V{1, 3}));
  s.training.deepPassFraction = 0.03;
  s.training.deepPasses = 2; // deep == passes
  EXPECT_EQ(s.scheduledPasses(), (V{1, 2}));
  s.training.deepPasses = 3;
  s.training.singlePassFraction = 1; // no multi-pass phase
  EXPECT_EQ(s.scheduledPasses(), (V{1}));
  s.training.singlePassFraction = 0; // no single-pass phase
  EXPECT_EQ(s.scheduledPasses(), (V{2, 3}));
  s.training.singlePassFraction = 0.5;
  s.training.passes = 1;
  s.training.deepPasses = 1;
  EXPECT_EQ(s.scheduledPasses(), (V{1}));
  s.training.passes = 2;
  s.training.deepPasses = 3;
  s.feedback.fusion = Fusion::None; // no feedback path: plain transformer
  EXPECT_EQ(s.scheduledPasses(), (V{1}));
}

TEST(SpecTest, ScheduledPassesOfPresets) {
  using V = std::vector<int64_t>;
  for (const char *name : {"tiny", "small", "124m", "1b"})
    EXPECT_EQ(loadSpec(presetPath(name))->scheduledPasses(),
              (V{1, 2, 3, 4, 5, 6, 7, 8}))
        << name;
}

TEST(SpecTest, PassDistribution) {
  using V = std::vector<int64_t>;
  json::Object o = tinyObject();
  json::Object *t = o.getObject("training");
  for (const char *key : {"passes", "deep_passes", "deep_pass_fraction"})
    t->erase(key);
  (*t)["pass_distribution"] = json::Object{{"12", 1}, {"2", 3}, {"4", 0}};
  ModelSpec s = parseOk(text(o));
  ASSERT_EQ(s.training.passDistribution.size(), 3u); // ascending, normalized
  EXPECT_EQ(s.training.passDistribution[0].first, 2);
  EXPECT_DOUBLE_EQ(s.training.passDistribution[0].second, 0.75);
  EXPECT_EQ(s.training.passDistribution[2].first, 12);
  EXPECT_DOUBLE_EQ(s.training.passDistribution[2].second, 0.25);
  EXPECT_EQ(s.scheduledPasses(), (V{1, 2, 12})); // weight 0: not compiled
}

TEST(SpecErrorTest, PassDistributionAndRecipe) {
  json::Object o = tinyObject();
  (*o.getObject("training"))["pass_distribution"] = json::Object{{"2", 1}};
  EXPECT_EQ(errorOf(text(o)),
            "tiny.json: training.passes: not allowed with "
            "training.pass_distribution, which gives the multi-pass phase's K");
  json::Object t = tinyObject();
  json::Object *tr = t.getObject("training");
  for (const char *key : {"passes", "deep_passes", "deep_pass_fraction"})
    tr->erase(key);
  (*tr)["pass_distribution"] = json::Object{{"1", 1}};
  EXPECT_EQ(errorOf(text(t)), "tiny.json: training.pass_distribution.1: "
                              "expected a pass count K, an integer >= 2");
  (*tr)["pass_distribution"] = json::Object{{"3", -1}};
  EXPECT_EQ(errorOf(text(t)), "tiny.json: training.pass_distribution.3: "
                              "expected a weight >= 0, got -1");
  (*tr)["pass_distribution"] = json::Object{{"3", 0}};
  EXPECT_EQ(errorOf(text(t)), "tiny.json: training.pass_distribution: "
                              "expected at least one weight > 0");
  (*tr)["pass_distribution"] = json::Array{2, 3};
  EXPECT_EQ(errorOf(text(t)),
            "tiny.json: training.pass_distribution: expected an object of K "
            "(an integer >= 2, as a string) to a weight >= 0, e.g. {\"2\": "
            "0.5, \"8\": 0.5}, got an array");
  EXPECT_EQ(errorOf(with("training.grad_passes", -1)),
            "tiny.json: training.grad_passes: expected an integer >= 0, got -1");
  EXPECT_EQ(errorOf(with("feedback.state", "final")),
            "tiny.json: feedback.state: expected one of pre_norm or "
            "post_norm, got \"final\"");
  EXPECT_EQ(errorOf(with("feedback.init", "xavier")),
            "tiny.json: feedback.init: expected one of normal or uniform, got "
            "\"xavier\"");
  EXPECT_EQ(errorOf(with("feedback.init_std", 0)),
            "tiny.json: feedback.init_std: expected a number > 0, got 0");
  EXPECT_EQ(errorOf(with("feedback.output_norm", "yes")),
            "tiny.json: feedback.output_norm: expected true or false, got "
            "\"yes\"");
}

} // namespace
