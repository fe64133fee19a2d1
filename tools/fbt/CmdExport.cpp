//===- CmdExport.cpp - fbt export: a checkpoint as a llama.cpp GGUF -------===//
//
// The standard regime of an FBT (u_t = e_t, DESIGN.md section 2) is a plain
// Llama: pre-norm blocks, RoPE, SwiGLU, RMSNorm, tied embeddings. What
// differs from llama.cpp's "llama" architecture, and how the export makes up
// for it, so that llama.cpp computes what `fbt generate --mode standard`
// does:
//  - Depth scaling: fbt adds a*Attn(.) and a*MLP(.) to the residual stream.
//    Both branches end in a linear map, so a is folded into attn_output and
//    ffn_down (W -> a*W).
//  - RoPE layout: fbt rotates channel i of a head with channel i + Dh/2 (HF
//    Llama's rotate-half); llama.cpp's llama rotates channels 2i and 2i+1
//    (rope type NORM). Permuting the rows of W_q and W_k within each head
//    (row 2i+j of llama.cpp's = row j*Dh/2+i of fbt's), as llama.cpp's own
//    converter does for HF checkpoints, turns one into the other; q.k is
//    unchanged because q and k are permuted alike.
//  - Tied embeddings: no output.weight; llama.cpp then uses token_embd.
//  - The byte-level vocabulary: tokenizer.ggml.model "gpt2" with the 256
//    GPT-2 byte symbols as tokens and no merges, so llama.cpp's BPE maps
//    each byte to its own id, as fbt's tokenizer does; id 0 (the document
//    separator fbt puts before every prompt) is BOS and EOS.
//  - The feedback weights: llama.cpp refuses a file holding tensors its
//    architecture does not use ("done_getting_tensors: wrong number of
//    tensors"), so they are left out unless --with-feedback asks for them
//    (as fbt.feedback.*), for readers other than llama.cpp.
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"

#include "runtime/base/Error.h"
#include "runtime/format/Bundle.h"
#include "runtime/format/Gguf.h"
#include "runtime/format/ModelConfig.h"
#include "runtime/format/Safetensors.h"
#include "runtime/text/Gpt2Bytes.h"
#include "runtime/text/Tokenizer.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string_view>

namespace fbt {

namespace {

/// What the export needs of the resolved spec beyond ModelConfig.
struct LlamaShape {
  int64_t contextLength = 0; ///< max_position_embeddings
  double rmsNormEps = 0;     ///< rms_norm_eps
  double ropeTheta = 0;      ///< rope_theta
  double depthScale = 0;     ///< feedback.depth_scaling, resolved to a number
};

LlamaShape readLlamaShape(const Bundle &bundle) {
  const Json &model = bundle.model();
  // Errors name the key's path, as parseModelConfig's do.
  auto read = [&](const char *path, auto get) {
    try {
      const Json *at = &model;
      for (std::string_view rest = path; !rest.empty();) {
        size_t dot = rest.find('.');
        at = &jsonAt(*at, rest.substr(0, dot));
        rest = dot == std::string_view::npos ? "" : rest.substr(dot + 1);
      }
      return get(*at);
    } catch (const RuntimeError &e) {
      throw RuntimeError(bundle.path() + ": model." + path + ": " + e.what());
    }
  };
  auto number = [](const Json &v) { return asDouble(v); };
  LlamaShape s;
  s.contextLength = read("max_position_embeddings", [](const Json &v) { return asInt(v); });
  s.rmsNormEps = read("rms_norm_eps", number);
  s.ropeTheta = read("rope_theta", number);
  s.depthScale = read("feedback.depth_scaling", number);
  return s;
}


/// llama.cpp's row order for W_q / W_k from fbt's (see the file comment):
/// within each head of `dh` rows, row 2i+j comes from row j*dh/2+i.
std::vector<float> ropeRowsToPairs(const std::vector<float> &w, int64_t rows,
                                   int64_t cols, int64_t heads) {
  int64_t dh = rows / heads, half = dh / 2;
  std::vector<float> out(w.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        const float *from = &w[(h * dh + j * half + i) * cols];
        std::copy(from, from + cols, &out[(h * dh + 2 * i + j) * cols]);
      }
  return out;
}

std::vector<float> scaled(std::vector<float> w, double a) {
  for (float &x : w)
    x = (float)(x * a);
  return w;
}

} // namespace

int runExport(int argc, char **argv) {
  CommandLine args(
      "fbt export",
      "Writes the standard (K=1) model of a checkpoint as a GGUF file of\n"
      "llama.cpp's \"llama\" architecture, f32: what `fbt generate --mode\n"
      "standard` computes, for llama.cpp and the tools built on it.");
  args.positional("BUNDLE", "the compiled bundle the checkpoint was trained with")
      .text("ckpt", "CKPT", "a checkpoint from fbt train (required)")
      .text("gguf", "OUT.gguf", "the file to write (required; replaced atomically)")
      .flag("with-feedback",
            "also store the feedback weights, as fbt.feedback.* (llama.cpp "
            "then refuses the file: it loads only files whose every tensor "
            "its architecture uses)")
      .footer("Depth scaling is folded into attn_output and ffn_down, W_q and W_k\n"
              "rows are permuted to llama.cpp's RoPE pairs, and the byte-level\n"
              "vocabulary is stored as GPT-2 byte symbols without merges. Runs\n"
              "with a GPT-2 BPE or SentencePiece tokenizer are not exported yet.");
  if (!args.parse(argc, argv))
    return 0;
  if (!args.has("ckpt") || !args.has("gguf"))
    throw RuntimeError("--ckpt and --gguf are required (see --help)");
  const std::string ckptPath = args.get("ckpt"), outPath = args.get("gguf");

  Bundle bundle = Bundle::load(args.require("BUNDLE"));
  ModelConfig m = parseModelConfig(bundle.model());
  LlamaShape shape = readLlamaShape(bundle);
  const bool withFeedback = args.has("with-feedback");

  // The model's weights alone: the AdamW moments beside them are twice
  // their size and not exported.
  auto isModelWeight = [&](std::string_view name) {
    for (const ParamSpec &p : bundle.params())
      if (p.name == name)
        return withFeedback || name.rfind("feedback.", 0) != 0;
    return false;
  };
  SafetensorsFile ckpt = readSafetensorsSome(ckptPath, isModelWeight);
  if (auto it = ckpt.metadata.find("fbt.model");
      it != ckpt.metadata.end() && it->second != m.name)
    throw RuntimeError(ckptPath + ": a checkpoint of model '" + it->second +
                       "', not of " + bundle.path() + "'s '" + m.name + "'");
  std::string tokenizer = "bytes";
  if (auto it = ckpt.metadata.find("fbt.tokenizer"); it != ckpt.metadata.end())
    tokenizer = canonicalTokenizerName(it->second);
  if (tokenizer != "bytes")
    throw RuntimeError(ckptPath + ": its run's tokenizer is '" + tokenizer +
                       "'; fbt export supports byte-level runs (tokenizer "
                       "bytes) for now");

  // A weight of the bundle's model, checked the way loading a checkpoint
  // checks it.
  auto weight = [&](const std::string &name) -> std::vector<float> {
    const ParamSpec *spec = nullptr;
    for (const ParamSpec &p : bundle.params())
      if (p.name == name)
        spec = &p;
    if (!spec)
      throw RuntimeError(bundle.path() + ": the bundle has no parameter '" +
                         name + "'");
    const Tensor *t = ckpt.find(name);
    if (!t)
      throw RuntimeError(ckptPath + ": missing tensor '" + name +
                         "' (does this checkpoint belong to this bundle?)");
    if (t->shape != spec->shape)
      throw RuntimeError(ckptPath + ": tensor '" + name + "' has shape " +
                         shapeString(t->shape) + ", the bundle expects " +
                         shapeString(spec->shape) +
                         " (does this checkpoint belong to this bundle?)");
    std::vector<float> values = t->toF32();
    for (float x : values)
      if (!std::isfinite(x))
        throw RuntimeError(ckptPath + ": tensor '" + name + "' holds NaN or Inf");
    return values;
  };

  const int64_t V = m.vocabSize, D = m.hiddenSize, L = m.numHiddenLayers,
                H = m.numAttentionHeads, F = m.intermediateSize;
  if (V > INT32_MAX || D > UINT32_MAX || F > UINT32_MAX ||
      shape.contextLength > UINT32_MAX)
    throw RuntimeError(bundle.path() + ": the model is too large for GGUF's "
                       "u32 hyperparameters");

  GgufWriter gguf; // alignment 32, llama.cpp's default, written explicitly
  gguf.addString("general.architecture", "llama");
  gguf.addString("general.name", m.name);
  gguf.addU32("general.file_type", 0); // LLAMA_FTYPE_ALL_F32
  gguf.addU32("llama.context_length", (uint32_t)shape.contextLength);
  gguf.addU32("llama.embedding_length", (uint32_t)D);
  gguf.addU32("llama.block_count", (uint32_t)L);
  gguf.addU32("llama.feed_forward_length", (uint32_t)F);
  gguf.addU32("llama.attention.head_count", (uint32_t)H);
  gguf.addU32("llama.attention.head_count_kv", (uint32_t)H);
  gguf.addU32("llama.rope.dimension_count", (uint32_t)(D / H));
  gguf.addF32("llama.rope.freq_base", (float)shape.ropeTheta);
  gguf.addF32("llama.attention.layer_norm_rms_epsilon", (float)shape.rmsNormEps);
  gguf.addU32("llama.vocab_size", (uint32_t)V);

  // Ids 0..255 are the bytes; a vocabulary padded past 256 gets unused
  // placeholders, so that the token list matches token_embd's rows.
  std::vector<std::string> tokens = gpt2::byteSymbols();
  std::vector<int32_t> types(tokens.size(), 1); // LLAMA_TOKEN_TYPE_NORMAL
  for (int64_t id = 256; id < V; ++id) {
    tokens.push_back("<fbt_unused_" + std::to_string(id) + ">");
    types.push_back(5); // LLAMA_TOKEN_TYPE_UNUSED
  }
  if ((int64_t)tokens.size() > V)
    throw RuntimeError(bundle.path() + ": the model's vocabulary (" +
                       std::to_string(V) + ") is smaller than the 256 bytes");
  // "default" pre-tokenization: with no merges, how text is split into
  // words does not change the ids (each byte stays its own token).
  gguf.addString("tokenizer.ggml.model", "gpt2");
  gguf.addString("tokenizer.ggml.pre", "default");
  gguf.addStringArray("tokenizer.ggml.tokens", tokens);
  gguf.addI32Array("tokenizer.ggml.token_type", types);
  gguf.addStringArray("tokenizer.ggml.merges", {});
  gguf.addU32("tokenizer.ggml.bos_token_id", (uint32_t)m.bosTokenId);
  gguf.addU32("tokenizer.ggml.eos_token_id", (uint32_t)m.bosTokenId);
  gguf.addBool("tokenizer.ggml.add_bos_token", true);
  gguf.addBool("tokenizer.ggml.add_eos_token", false);
  // Where it came from; readers ignore keys they do not know.
  gguf.addString("fbt.tokenizer", tokenizer);
  if (auto it = ckpt.metadata.find("fbt.step"); it != ckpt.metadata.end())
    gguf.addString("fbt.step", it->second);
  gguf.addF32("fbt.depth_scaling_folded", (float)shape.depthScale);

  gguf.addTensor("token_embd.weight", {V, D}, weight("model.embed_tokens.weight"));
  for (int64_t l = 0; l < L; ++l) {
    std::string from = "model.layers." + std::to_string(l) + ".";
    std::string to = "blk." + std::to_string(l) + ".";
    gguf.addTensor(to + "attn_norm.weight", {D},
                   weight(from + "input_layernorm.weight"));
    gguf.addTensor(to + "attn_q.weight", {D, D},
                   ropeRowsToPairs(weight(from + "self_attn.q_proj.weight"), D, D, H));
    gguf.addTensor(to + "attn_k.weight", {D, D},
                   ropeRowsToPairs(weight(from + "self_attn.k_proj.weight"), D, D, H));
    gguf.addTensor(to + "attn_v.weight", {D, D}, weight(from + "self_attn.v_proj.weight"));
    gguf.addTensor(to + "attn_output.weight", {D, D},
                   scaled(weight(from + "self_attn.o_proj.weight"), shape.depthScale));
    gguf.addTensor(to + "ffn_norm.weight", {D},
                   weight(from + "post_attention_layernorm.weight"));
    gguf.addTensor(to + "ffn_gate.weight", {F, D}, weight(from + "mlp.gate_proj.weight"));
    gguf.addTensor(to + "ffn_up.weight", {F, D}, weight(from + "mlp.up_proj.weight"));
    gguf.addTensor(to + "ffn_down.weight", {D, F},
                   scaled(weight(from + "mlp.down_proj.weight"), shape.depthScale));
  }
  gguf.addTensor("output_norm.weight", {D}, weight("model.norm.weight"));
  size_t feedbackTensors = 0;
  if (withFeedback)
    for (const ParamSpec &p : bundle.params())
      if (p.name.rfind("feedback.", 0) == 0) {
        gguf.addTensor("fbt." + p.name, p.shape, weight(p.name));
        ++feedbackTensors;
      }

  gguf.writeAtomic(outPath);
  std::printf("wrote %s: %s, %zu tensors (llama: V=%lld D=%lld L=%lld H=%lld "
              "F=%lld), depth scaling %.4g folded%s\n",
              outPath.c_str(), m.name.c_str(), gguf.tensorCount(), (long long)V,
              (long long)D, (long long)L, (long long)H, (long long)F,
              shape.depthScale,
              feedbackTensors ? ", feedback weights as fbt.feedback.*" : "");
  return 0;
}

} // namespace fbt
