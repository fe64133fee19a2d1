//===- LlamaGguf.h - an FBT's standard regime as llama.cpp's llama -*- C++ -*-===//
//
// The standard regime of an FBT (u_t = e_t, DESIGN.md section 2) is a plain
// Llama: pre-norm blocks, RoPE, SwiGLU, RMSNorm, tied embeddings. What
// differs from llama.cpp's "llama" architecture, and how the conversion
// makes up for it, so that llama.cpp computes what `fbt generate --mode
// standard` does:
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
//  - The vocabulary: tokenizer.ggml.model "gpt2", the tokens in GPT-2's
//    byte symbols with their merges (none for the byte-level vocabulary,
//    so llama.cpp's BPE maps each byte to its own id, as fbt's tokenizer
//    does); BOS (the document separator fbt puts before every prompt) is
//    also EOS.
// fbt export (tools/fbt/CmdExport.cpp) reads the checkpoint and writes the
// file; this is the conversion, unit-tested on its own (LlamaGgufTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_INTEROP_LLAMAGGUF_H
#define FBT_RUNTIME_INTEROP_LLAMAGGUF_H

#include "runtime/interop/Gguf.h"

#include <cstdint>
#include <functional>
#include "runtime/format/RopeScaling.h"

#include <string>
#include <vector>

namespace fbt::llama {

/// The model's hyperparameters as llama.cpp's llama names them.
struct Hyperparameters {
  std::string name;
  int64_t vocab = 0, hidden = 0, layers = 0, heads = 0, intermediate = 0;
  int64_t contextLength = 0; ///< max_position_embeddings
  double rmsNormEps = 0;     ///< rms_norm_eps
  double ropeTheta = 0;      ///< rope_theta
  RopeScaling ropeScaling;   ///< rope_scaling (none: factor 1)
  double depthScale = 0;     ///< feedback.depth_scaling, resolved to a number
  int64_t bosTokenId = 0;
};

/// llama.cpp's row order for W_q / W_k from fbt's: within each head of
/// rows / heads rows, row 2i+j comes from row j*dh/2+i.
std::vector<float> ropeRowsToPairs(const std::vector<float> &w, int64_t rows, int64_t cols,
                                   int64_t heads);

/// llama.cpp's general.file_type for files whose matrices are `t`
/// (LLAMA_FTYPE_ALL_F32, MOSTLY_F16, MOSTLY_BF16, MOSTLY_Q8_0).
uint32_t fileType(ggml::TensorType t);

/// general.* and llama.* keys (general.file_type from the matrices' type).
/// RuntimeError where a value does not fit GGUF's u32 fields.
void addHyperparameters(GgufWriter &gguf, const Hyperparameters &h,
                        ggml::TensorType matrices = ggml::TensorType::F32);

/// A byte-level BPE vocabulary as llama.cpp's "gpt2" tokenizer model.
struct BpeVocabulary {
  /// Each id's token in GPT-2's byte symbols (Gpt2Bytes.h); "" for an id no
  /// token has, stored as an unused placeholder.
  std::vector<std::string> tokens;
  /// "a b", in rank order; none for the byte-level vocabulary.
  std::vector<std::string> merges;
  /// Special tokens (<|endoftext|>): control tokens, never made from text.
  std::vector<int64_t> control;
  /// The document separator fbt puts before every prompt: llama.cpp's BOS,
  /// and its EOS, where fbt generate stops.
  int64_t separator = 0;
};

/// `v` as tokenizer.ggml.*, with unused placeholders up to h.vocab so the
/// token list matches token_embd's rows. RuntimeError for a model
/// vocabulary smaller than the tokenizer's.
void addBpeVocabulary(GgufWriter &gguf, const Hyperparameters &h, const BpeVocabulary &v);

/// A weight by its fbt name ("model.layers.0.self_attn.q_proj.weight"),
/// row-major, checked by the caller.
using WeightSource = std::function<std::vector<float>(const std::string &)>;

/// token_embd, each block's norms, attention and MLP (permuted and scaled as
/// above), output_norm; the matrices stored as `matrices` (the norms stay
/// F32, as llama.cpp's own conversions keep them). Returns the number of
/// tensors added.
size_t addTensors(GgufWriter &gguf, const Hyperparameters &h, const WeightSource &weight,
                  ggml::TensorType matrices = ggml::TensorType::F32);

} // namespace fbt::llama

#endif // FBT_RUNTIME_INTEROP_LLAMAGGUF_H
