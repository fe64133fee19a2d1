//===- Describe.cpp - Planning figures for a model spec -------------------===//
//
// Conventions, so the numbers can be checked by hand:
// - A multiply-add is 2 FLOPs. Training counts forward + backward as 3x the
//   forward (PaLM's 6N per token), and attention as 12*L*T*D per token
//   (scores and values, forward and backward, without halving for the causal
//   mask).
// - Training memory is fp32 throughout (4 bytes): master weights, gradients
//   and both AdamW moments, plus the activations a straightforward reverse
//   pass saves (the model is spelled out at `activations` below). Kernel
//   fusion and recomputation lower the real figure; this is the plan's
//   upper bound.
// - Every figure is uint64 with checked arithmetic: parseSpec rejects a spec
//   whose figures overflow, naming the field to shrink.
//
//===----------------------------------------------------------------------===//

#include "frontend/Describe.h"

#include "dialect/TruncatedPasses.h"
#include "frontend/Parameters.h"
#include "frontend/SpecJson.h"
#include "runtime/format/ZeroShards.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

using namespace fbt;
using llvm::StringRef;

namespace {

/// A uint64 quantity computed from spec fields. It remembers whether any
/// step overflowed and which input field was the largest, which is the one
/// an overflow error blames.
struct Figure {
  uint64_t value = 0;
  bool overflow = false;
  const char *blame = nullptr;
  uint64_t blameValue = 0;

  Figure(uint64_t constant = 0) : value(constant) {}

  /// A spec field. `shown` is the value the user wrote, when the figure
  /// uses a value derived from it (S/2 from S).
  static Figure field(const char *name, uint64_t value, uint64_t shown) {
    Figure f(value);
    f.blame = name;
    f.blameValue = shown;
    return f;
  }
  static Figure field(const char *name, int64_t value) {
    return field(name, uint64_t(value), uint64_t(value));
  }

  friend Figure operator+(Figure a, const Figure &b) {
    a.merge(b);
    a.overflow |= __builtin_add_overflow(a.value, b.value, &a.value);
    return a;
  }
  friend Figure operator*(Figure a, const Figure &b) {
    a.merge(b);
    a.overflow |= __builtin_mul_overflow(a.value, b.value, &a.value);
    return a;
  }

private:
  void merge(const Figure &b) {
    overflow |= b.overflow;
    if (b.blame && (!blame || b.blameValue > blameValue)) {
      blame = b.blame;
      blameValue = b.blameValue;
    }
  }
};

/// Collects figures in order and keeps the first that overflowed.
class Checker {
public:
  uint64_t operator()(const Figure &f, StringRef what) {
    if (f.overflow && !firstOverflow)
      firstOverflow = {f, what.str()};
    return f.value;
  }
  llvm::Error takeError() const {
    if (!firstOverflow)
      return llvm::Error::success();
    const auto &[f, what] = *firstOverflow;
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   llvm::Twine(f.blame ? f.blame : "spec") +
                                       ": expected a smaller value (" + what +
                                       " would exceed 64 bits), got " +
                                       llvm::Twine(f.blameValue));
  }

private:
  std::optional<std::pair<Figure, std::string>> firstOverflow;
};

} // namespace

namespace {
/// The spec's sizes as Figures, each naming its field.
struct Sizes {
  Figure V, D, L, H, F, T, B, S, Bi;
  const char *seqName; ///< the field S names
  int64_t seq;

  explicit Sizes(const ModelSpec &spec)
      : V(Figure::field("vocab_size", spec.vocabSize)),
        D(Figure::field("hidden_size", spec.hiddenSize)),
        L(Figure::field("num_hidden_layers", spec.numHiddenLayers)),
        H(Figure::field("num_attention_heads", spec.numAttentionHeads)),
        F(Figure::field("intermediate_size", spec.intermediateSize)),
        T(Figure::field("training.sequence_length", spec.training.sequenceLength)),
        B(Figure::field("training.batch_size", spec.training.batchSize)),
        Bi(Figure::field("inference.batch_size", spec.inference.batchSize)),
        // max_sequence_length defaults to max_position_embeddings; when they
        // are equal, name the field the user most likely wrote.
        seqName(spec.inference.maxSequenceLength == spec.maxPositionEmbeddings
                    ? "max_position_embeddings"
                    : "inference.max_sequence_length"),
        seq(spec.inference.maxSequenceLength) {
    S = Figure::field(seqName, seq);
  }
};

/// The feedback path's parameters: W_U and W_G (glu), W (concat), W_U (add).
Figure feedbackParams(const ModelSpec &spec, const Sizes &z) {
  switch (spec.feedback.fusion) {
  case Fusion::Glu:    // W_U, W_G: D x D each.
  case Fusion::Concat: // W: D x 2D.
    return 2 * z.D * z.D;
  case Fusion::Add: // W_U.
    return z.D * z.D;
  case Fusion::None:
    break;
  }
  return Figure();
}

/// A training step of K passes: FLOPs per token and memory.
PassFigures describePass(const ModelSpec &spec, const Sizes &z, int64_t k, const Figure &matmul,
                         const Figure &fb, const Figure &fixedBytes, Checker &check) {
  const Figure &V = z.V, &D = z.D, &L = z.L, &H = z.H, &F = z.F, &T = z.T, &B = z.B;
  const char *kName = !spec.training.passDistribution.empty() ? "training.pass_distribution"
                      : k == spec.training.passes            ? "training.passes"
                                                             : "training.deep_passes";
  // With grad_passes, pass 1 and passes first..K are trained; the passes
  // between run forward only (a third of the work, nothing saved).
  int64_t first = firstTrainedPass(k, spec.training.gradPasses);
  uint64_t trainedFused = k > 1 ? uint64_t(k - first + 1) : 0;
  uint64_t forwardOnly = k > 1 ? uint64_t(first - 2) : 0;
  Figure trained = Figure::field(kName, 1 + trainedFused, uint64_t(k));
  Figure fusedPasses = Figure::field(kName, trainedFused, uint64_t(k));
  Figure forward = Figure::field(kName, forwardOnly, uint64_t(k));
  std::string at = " at K=" + std::to_string(k);

  // Every trained pass runs the full stack forward and backward (6 FLOPs
  // per weight), a forward-only pass forward (2); passes k > 1 also run
  // the fusion's GEMMs.
  Figure flops = trained * (6 * matmul + 12 * L * T * D) + fusedPasses * 6 * fb +
                 forward * (2 * matmul + 4 * L * T * D + 2 * fb);
  // Saved per token, per layer: attention-norm input and output (2D),
  // q, k, v (3D), attention output (D), residual after attention (D),
  // MLP-norm output (D), MLP output (D): 9D; gate, up and SwiGLU output
  // (3F); the attention probabilities (H*T). Per token outside the
  // layers: logits and their softmax (2V), final-norm output (D). Per
  // fused pass and token: s, W_U s and the gate (3D). Only trained passes
  // keep theirs for the backward.
  Figure activations = 4 * (trained * B * T * (L * (9 * D + 3 * F + H * T) + 2 * V + D) +
                            fusedPasses * B * T * 3 * D);
  PassFigures p;
  p.passes = k;
  p.trainFlopsPerToken = check(flops, "the training FLOPs per token" + at);
  p.activationBytes = check(activations, "the activation bytes" + at);
  p.stepBytes = check(fixedBytes + activations, "the training memory" + at);
  return p;
}

/// The KV cache and one decoded token's FLOPs.
void describeInference(const Sizes &z, const Figure &matmul, const Figure &fb, Checker &check,
                       Description &d) {
  const Figure &L = z.L, &D = z.D;
  // K and V for every layer and token.
  Figure kvToken32 = 2 * L * D * 4, kvToken16 = 2 * L * D * 2;
  d.kvBytesPerTokenFp32 = check(kvToken32, "the KV-cache bytes per token");
  d.kvBytesPerTokenBf16 = check(kvToken16, "the KV-cache bytes per token");
  d.kvBytesFp32 = check(kvToken32 * z.S * z.Bi, "the KV-cache bytes");
  d.kvBytesBf16 = check(kvToken16 * z.S * z.Bi, "the KV-cache bytes");

  // One decoded token: every matmul weight once (2 FLOPs), then q.k and
  // p.v over `ctx` cached tokens (2*D each, per layer).
  Figure ctx = Figure::field(z.seqName, uint64_t(z.seq / 2), uint64_t(z.seq));
  Figure perContext = 4 * L * D;
  d.decodeContext = ctx.value;
  d.decodeFlopsPerToken = check(2 * matmul + perContext * ctx, "the decode FLOPs per token");
  d.decodeFlopsPerContextToken = check(perContext, "the decode FLOPs per context token");
  // Soft decoding adds the fusion's GEMMs and the gate's elementwise work
  // (sigmoid and product, counted as 4 FLOPs per element).
  d.softExtraFlopsPerToken = check(2 * fb + 4 * D, "the soft-decoding FLOPs per token");
  d.softExtraPercent =
      d.decodeFlopsPerToken
          ? 100.0 * double(d.softExtraFlopsPerToken) / double(d.decodeFlopsPerToken)
          : 0;
}
} // namespace

llvm::Expected<Description> fbt::tryDescribe(const ModelSpec &spec) {
  Checker check;
  Description d;
  Sizes z(spec);
  const Figure &V = z.V, &D = z.D, &L = z.L, &F = z.F;

  // Per layer: two RMSNorm scales (2D), Q K V O (4D^2), gate up down (3DF).
  Figure shared = V * D + L * (2 * D + 4 * D * D + 3 * D * F) + D;
  Figure fb = feedbackParams(spec, z);
  Figure total = shared + fb;
  Figure matmul = L * (4 * D * D + 3 * D * F) + V * D;
  d.sharedParams = check(shared, "the shared parameter count");
  d.feedbackParams = check(fb, "the feedback parameter count");
  d.totalParams = check(total, "the parameter count");
  d.matmulParams = check(matmul, "the matmul parameter count");

  Figure weights = 4 * total, grads = 4 * total, adam = 8 * total;
  d.tokensPerStep = check(z.B * z.T, "the tokens per step");
  d.weightBytes = check(weights, "the weight bytes");
  d.gradientBytes = check(grads, "the gradient bytes");
  d.optimizerBytes = check(adam, "the optimizer bytes");
  for (int64_t k : spec.scheduledPasses())
    d.passes.push_back(describePass(spec, z, k, matmul, fb, weights + grads + adam, check));
  PassFigures one = describePass(spec, z, 1, matmul, fb, weights + grads + adam, check);
  for (auto [k, share] : spec.passShares())
    for (const PassFigures &p : d.passes)
      if (p.passes == k)
        d.scheduleFlopsPerToken += share * double(p.trainFlopsPerToken);
  if (one.trainFlopsPerToken)
    d.scheduleFlopsRatio = d.scheduleFlopsPerToken / double(one.trainFlopsPerToken);
  describeInference(z, matmul, fb, check, d);

  if (llvm::Error e = check.takeError())
    return std::move(e);
  for (const ParameterInfo &p : parameterList(spec)) {
    int64_t n = 1;
    for (int64_t dim : p.shape)
      n *= dim;
    d.parameterElements.push_back(n);
  }
  d.dataParallel = describeRanks(d, {8, 64});
  return d;
}

std::vector<RankFigures> fbt::describeRanks(const Description &d,
                                            const std::vector<int64_t> &ranks) {
  std::vector<RankFigures> out;
  for (int64_t n : ranks) {
    RankFigures r;
    r.ranks = n;
    r.tokensPerStep = d.tokensPerStep * n;
    // A ring all-reduce sends each of the N chunks N-1 times to reduce and
    // N-1 times to gather: 2(N-1)/N of the buffer per rank.
    r.allReduceBytesPerRank = d.gradientBytes / n * 2 * (n - 1);
    r.optimizerBytesPerRank = d.optimizerBytes;
    if (size_t(n) <= d.parameterElements.size()) {
      std::vector<int64_t> shares = zeroShares(d.parameterElements, int(n));
      // m and v, fp32 each.
      r.zeroOptimizerBytesPerRank =
          uint64_t(*std::max_element(shares.begin(), shares.end())) * 2 * sizeof(float);
    }
    out.push_back(r);
  }
  return out;
}

Description fbt::describe(const ModelSpec &spec) {
  llvm::Expected<Description> d = tryDescribe(spec);
  if (!d)
    llvm::report_fatal_error(llvm::Twine("describe: ") +
                             llvm::toString(d.takeError()));
  return std::move(*d);
}

namespace {

std::string formatScaled(uint64_t n, double step, const char *const units[],
                         const char *separator) {
  double x = double(n);
  int unit = -1;
  while (x >= step - 0.05 && unit < 5) {
    x /= step;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%s%s", x, separator, units[unit]);
  return buf;
}

} // namespace

std::string fbt::formatCount(uint64_t n) {
  static const char *const units[] = {"K", "M", "G", "T", "P", "E"};
  if (n < 1000)
    return std::to_string(n);
  return formatScaled(n, 1000, units, "");
}

std::string fbt::formatBytes(uint64_t n) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (n < 1024)
    return std::to_string(n) + " B";
  return formatScaled(n, 1024, units, " ");
}

namespace {

/// A table of "label  exact  human" rows under section headings.
class Table {
public:
  void heading(std::string text) { rows.push_back({std::move(text), "", ""}); }
  void count(std::string label, uint64_t n) {
    rows.push_back({"  " + label, std::to_string(n), formatCount(n)});
  }
  void bytes(std::string label, uint64_t n) {
    rows.push_back({"  " + label, std::to_string(n), formatBytes(n)});
  }
  void text(std::string label, std::string exact, std::string human) {
    rows.push_back({"  " + label, std::move(exact), std::move(human)});
  }

  void print(llvm::raw_ostream &os) const {
    size_t labelWidth = 0, exactWidth = 0, humanWidth = 0;
    for (const Row &r : rows) {
      if (r.exact.empty())
        continue;
      labelWidth = std::max(labelWidth, r.label.size());
      exactWidth = std::max(exactWidth, r.exact.size());
      humanWidth = std::max(humanWidth, r.human.size());
    }
    for (const Row &r : rows) {
      if (r.exact.empty()) {
        os << r.label << "\n";
        continue;
      }
      os << llvm::left_justify(r.label, labelWidth) << "  "
         << llvm::right_justify(r.exact, exactWidth) << "  "
         << llvm::right_justify(r.human, humanWidth) << "\n";
    }
  }

private:
  struct Row {
    std::string label, exact, human;
  };
  std::vector<Row> rows;
};

std::string passList(const ModelSpec &spec) {
  std::string s;
  for (int64_t k : spec.scheduledPasses())
    s += (s.empty() ? "" : ", ") + std::to_string(k);
  return "{" + s + "}";
}

} // namespace

void fbt::printDescription(const ModelSpec &spec, const Description &d,
                           llvm::raw_ostream &os) {
  os << "model " << spec.name << ": V=" << spec.vocabSize
     << " D=" << spec.hiddenSize << " L=" << spec.numHiddenLayers
     << " H=" << spec.numAttentionHeads << " (head dim " << spec.headDim()
     << ") F=" << spec.intermediateSize << "\n";
  os << "feedback: " << kindName(spec.feedback.fusion)
     << " fusion, depth scaling "
     << llvm::format("%.4g", spec.feedback.depthScaling) << ", K in "
     << passList(spec) << "\n\n";

  Table t;
  t.heading("parameters");
  t.count("shared (tied E, layers, final norm)", d.sharedParams);
  t.count("feedback (" + std::string(kindName(spec.feedback.fusion)) + ")",
          d.feedbackParams);
  t.count("total", d.totalParams);

  t.heading("training (fp32, batch " + std::to_string(spec.training.batchSize) +
            " x " + std::to_string(spec.training.sequenceLength) + " tokens)");
  t.bytes("weights", d.weightBytes);
  t.bytes("gradients", d.gradientBytes);
  t.bytes("AdamW moments", d.optimizerBytes);
  for (const PassFigures &p : d.passes) {
    std::string k = "K=" + std::to_string(p.passes) + " ";
    t.count(k + "FLOPs per token", p.trainFlopsPerToken);
    t.bytes(k + "activations", p.activationBytes);
    t.bytes(k + "step memory", p.stepBytes);
  }
  {
    char exact[32], human[32];
    std::snprintf(exact, sizeof(exact), "%.0f", d.scheduleFlopsPerToken);
    std::snprintf(human, sizeof(human), "%.3fx K=1", d.scheduleFlopsRatio);
    t.text("schedule FLOPs per token (" + std::to_string(spec.training.steps) + " steps)",
           exact, human);
  }

  for (const RankFigures &r : d.dataParallel) {
    t.heading("data parallel, " + std::to_string(r.ranks) + " ranks");
    t.count("tokens per step (global batch)", r.tokensPerStep);
    t.bytes("sent per rank per step", r.allReduceBytesPerRank);
    t.bytes("AdamW moments per rank", r.optimizerBytesPerRank);
    if (r.zeroOptimizerBytesPerRank)
      t.bytes("ZeRO-1 moments per rank (largest)", *r.zeroOptimizerBytesPerRank);
    else
      t.text("ZeRO-1 moments per rank", "-", "more ranks than parameters");
  }

  t.heading("inference (batch " + std::to_string(spec.inference.batchSize) +
            ", context " + std::to_string(spec.inference.maxSequenceLength) +
            ")");
  t.bytes("KV cache per token, fp32", d.kvBytesPerTokenFp32);
  t.bytes("KV cache per token, bf16", d.kvBytesPerTokenBf16);
  t.bytes("KV cache, full context, fp32", d.kvBytesFp32);
  t.bytes("KV cache, full context, bf16", d.kvBytesBf16);
  t.count("decode FLOPs per token at context " +
              std::to_string(d.decodeContext),
          d.decodeFlopsPerToken);
  t.count("  + per context token", d.decodeFlopsPerContextToken);
  t.count("soft decoding extra FLOPs per token", d.softExtraFlopsPerToken);
  char exact[32], human[32];
  std::snprintf(exact, sizeof(exact), "%.3f", d.softExtraPercent);
  std::snprintf(human, sizeof(human), "%.1f%%", d.softExtraPercent);
  t.text("  relative to standard decoding (%)", exact, human);
  t.print(os);
}

void fbt::printDescriptionJson(const ModelSpec &spec, const Description &d,
                               llvm::raw_ostream &os) {
  llvm::json::OStream j(os);
  j.object([&] {
    j.attribute("name", spec.name);
    // The spec with every default resolved, as the bundle's manifest holds
    // it: what scripts read the schedule and recipe from, so that no other
    // language keeps its own copy of the defaults.
    j.attribute("spec", specToJson(spec));
    j.attributeObject("config", [&] {
      j.attribute("vocab_size", spec.vocabSize);
      j.attribute("hidden_size", spec.hiddenSize);
      j.attribute("num_hidden_layers", spec.numHiddenLayers);
      j.attribute("num_attention_heads", spec.numAttentionHeads);
      j.attribute("head_dim", spec.headDim());
      j.attribute("intermediate_size", spec.intermediateSize);
      j.attribute("fusion", kindName(spec.feedback.fusion));
      j.attribute("depth_scaling", spec.feedback.depthScaling);
      j.attributeArray("scheduled_passes", [&] {
        for (int64_t k : spec.scheduledPasses())
          j.value(k);
      });
    });
    j.attributeObject("params", [&] {
      j.attribute("shared", d.sharedParams);
      j.attribute("feedback", d.feedbackParams);
      j.attribute("total", d.totalParams);
      j.attribute("matmul", d.matmulParams);
    });
    j.attributeObject("training", [&] {
      j.attribute("batch_size", spec.training.batchSize);
      j.attribute("sequence_length", spec.training.sequenceLength);
      j.attribute("tokens_per_step", d.tokensPerStep);
      j.attribute("weight_bytes", d.weightBytes);
      j.attribute("gradient_bytes", d.gradientBytes);
      j.attribute("optimizer_bytes", d.optimizerBytes);
      j.attribute("schedule_flops_per_token", d.scheduleFlopsPerToken);
      j.attribute("schedule_flops_ratio", d.scheduleFlopsRatio);
      j.attributeArray("passes", [&] {
        for (const PassFigures &p : d.passes)
          j.object([&] {
            j.attribute("k", p.passes);
            j.attribute("flops_per_token", p.trainFlopsPerToken);
            j.attribute("activation_bytes", p.activationBytes);
            j.attribute("step_bytes", p.stepBytes);
          });
      });
    });
    j.attributeArray("data_parallel", [&] {
      for (const RankFigures &r : d.dataParallel)
        j.object([&] {
          j.attribute("ranks", r.ranks);
          j.attribute("tokens_per_step", r.tokensPerStep);
          j.attribute("all_reduce_bytes_per_rank", r.allReduceBytesPerRank);
          j.attribute("optimizer_bytes_per_rank", r.optimizerBytesPerRank);
          if (r.zeroOptimizerBytesPerRank)
            j.attribute("zero_optimizer_bytes_per_rank", *r.zeroOptimizerBytesPerRank);
        });
    });
    j.attributeObject("inference", [&] {
      j.attribute("batch_size", spec.inference.batchSize);
      j.attribute("max_sequence_length", spec.inference.maxSequenceLength);
      j.attribute("kv_bytes_per_token_fp32", d.kvBytesPerTokenFp32);
      j.attribute("kv_bytes_per_token_bf16", d.kvBytesPerTokenBf16);
      j.attribute("kv_bytes_fp32", d.kvBytesFp32);
      j.attribute("kv_bytes_bf16", d.kvBytesBf16);
      j.attribute("decode_context", d.decodeContext);
      j.attribute("decode_flops_per_token", d.decodeFlopsPerToken);
      j.attribute("decode_flops_per_context_token",
                  d.decodeFlopsPerContextToken);
      j.attribute("soft_extra_flops_per_token", d.softExtraFlopsPerToken);
      j.attribute("soft_extra_percent", d.softExtraPercent);
    });
  });
  os << "\n";
}
