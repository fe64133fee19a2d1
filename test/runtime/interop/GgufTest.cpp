//===- GgufTest.cpp - the GGUF writer: layout, metadata, refusals ---------===//
//
// The file is read back by a minimal reader written from the format's
// description (GgufReader.h), so the test checks the bytes, not the writer
// against itself: the header, keys in order with their types, tensor infos with
// dimensions innermost first, offsets that are the padded ends of the tensors
// before (as llama.cpp's reader requires), the data where the offsets say.
// That llama.cpp itself loads an export is test/e2e/gguf-export.test.
//
//===----------------------------------------------------------------------===//

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/interop/Gguf.h"
#include "runtime/format/Safetensors.h"

#include "test/runtime/TempDir.h"
#include "test/runtime/interop/GgufReader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

using namespace fbt;
using namespace fbt::test;

namespace {

GgufWriter sample() {
  GgufWriter w;
  w.addString("general.architecture", "llama");
  w.addU32("llama.block_count", 2);
  w.addI32("fbt.signed", -5);
  w.addU64("fbt.big", uint64_t(1) << 40);
  w.addF32("llama.rope.freq_base", 10000.0f);
  w.addBool("tokenizer.ggml.add_bos_token", true);
  w.addStringArray("tokenizer.ggml.tokens", {"a", "\xc4\x80", ""});
  w.addStringArray("tokenizer.ggml.merges", {});
  w.addI32Array("tokenizer.ggml.token_type", {1, 3, 5});
  w.addF32Array("fbt.scores", {0.5f, -1.0f});
  // 3 values (12 bytes: padded to 32), then a [2, 3] matrix, then 9 values.
  w.addTensor("norm.weight", {3}, {1, 2, 3});
  w.addTensor("blk.0.attn_q.weight", {2, 3}, {1, 2, 3, 4, 5, 6});
  w.addTensor("last", {9}, {9, 8, 7, 6, 5, 4, 3, 2, 1});
  return w;
}

} // namespace

TEST(GgufTest, HeaderMetadataAndTensorLayout) {
  GgufWriter w = sample();
  std::string bytes = w.serialize();
  Parsed p = parse(bytes, 32);
  EXPECT_EQ(p.version, 3u);

  ASSERT_EQ(p.keys.size(), 11u);
  EXPECT_EQ(w.keyCount(), 11u);
  // general.alignment first, as u32.
  EXPECT_EQ(p.keys[0].first, "general.alignment");
  EXPECT_EQ(p.keys[0].second.type, GgufType::U32);
  EXPECT_EQ(p.keys[0].second.u, 32u);
  std::map<std::string, Value> kv(p.keys.begin(), p.keys.end());
  EXPECT_EQ(kv["general.architecture"].s, "llama");
  EXPECT_EQ(kv["llama.block_count"].type, GgufType::U32);
  EXPECT_EQ(kv["llama.block_count"].u, 2u);
  EXPECT_EQ((int64_t)kv["fbt.signed"].u, -5);
  EXPECT_EQ(kv["fbt.big"].u, uint64_t(1) << 40);
  EXPECT_EQ(kv["llama.rope.freq_base"].type, GgufType::F32);
  EXPECT_EQ(kv["llama.rope.freq_base"].f, 10000.0);
  EXPECT_EQ(kv["tokenizer.ggml.add_bos_token"].type, GgufType::Bool);
  EXPECT_EQ(kv["tokenizer.ggml.add_bos_token"].u, 1u);
  EXPECT_EQ(kv["tokenizer.ggml.tokens"].elementType, GgufType::String);
  EXPECT_EQ(kv["tokenizer.ggml.tokens"].strings,
            (std::vector<std::string>{"a", "\xc4\x80", ""}));
  EXPECT_EQ(kv["tokenizer.ggml.merges"].elementType, GgufType::String);
  EXPECT_TRUE(kv["tokenizer.ggml.merges"].strings.empty());
  EXPECT_EQ(kv["tokenizer.ggml.token_type"].ints, (std::vector<int64_t>{1, 3, 5}));
  EXPECT_EQ(kv["fbt.scores"].floats, (std::vector<float>{0.5f, -1.0f}));

  ASSERT_EQ(p.tensors.size(), 3u);
  EXPECT_EQ(p.tensors[0].name, "norm.weight");
  EXPECT_EQ(p.tensors[0].dims, (std::vector<uint64_t>{3}));
  EXPECT_EQ(p.tensors[0].offset, 0u);
  // Row-major [2, 3] is ggml's ne = {3, 2}.
  EXPECT_EQ(p.tensors[1].dims, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(p.tensors[1].offset, 32u);
  EXPECT_EQ(p.tensors[2].offset, 64u);
  for (const TensorInfo &t : p.tensors)
    EXPECT_EQ(t.type, (uint32_t)ggml::TensorType::F32);

  EXPECT_EQ(p.dataStart % 32, 0u);
  EXPECT_EQ(floatsAt(bytes, p.dataStart, 3), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(floatsAt(bytes, p.dataStart + 32, 6),
            (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(floatsAt(bytes, p.dataStart + 64, 9),
            (std::vector<float>{9, 8, 7, 6, 5, 4, 3, 2, 1}));
  // Every tensor is padded, the last one too: the file ends on the alignment.
  EXPECT_EQ(bytes.size(), p.dataStart + 64 + 64);
  EXPECT_EQ(bytes.size() % 32, 0u);
}

TEST(GgufTest, OtherAlignment) {
  GgufWriter w(64);
  w.addTensor("a", {5}, {1, 2, 3, 4, 5});
  w.addTensor("b", {1}, {7});
  std::string bytes = w.serialize();
  Parsed p = parse(bytes, 64);
  EXPECT_EQ(p.keys[0].second.u, 64u);
  EXPECT_EQ(p.tensors[1].offset, 64u);
  EXPECT_EQ(p.dataStart % 64, 0u);
  EXPECT_EQ(floatsAt(bytes, p.dataStart + 64, 1), (std::vector<float>{7}));
}

TEST(GgufTest, WriteAtomicWritesTheSameBytes) {
  test::TempDir dir;
  GgufWriter w = sample();
  std::string path = dir.file("m.gguf");
  w.writeAtomic(path);
  EXPECT_EQ(readFile(path), w.serialize());
}

TEST(GgufTest, RefusesWhatReadersRefuse) {
  auto message = [](auto add) -> std::string {
    try {
      GgufWriter w;
      w.addTensor("t", {1}, {0});
      add(w);
    } catch (const RuntimeError &e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message([](GgufWriter &w) { w.addU32("general.alignment", 8); }),
            "GGUF: metadata key 'general.alignment' given twice");
  EXPECT_EQ(message([](GgufWriter &w) { w.addTensor("t", {1}, {1}); }),
            "GGUF: tensor 't' given twice");
  EXPECT_EQ(message([](GgufWriter &w) { w.addTensor(std::string(64, 'x'), {1}, {1}); }),
            "GGUF: tensor name '" + std::string(64, 'x') + "' must have 1 to 63 bytes");
  EXPECT_EQ(message([](GgufWriter &w) { w.addTensor("u", {2, 2}, {1, 2, 3}); }),
            "GGUF: tensor 'u' has 3 values, its shape 4");
  EXPECT_EQ(message([](GgufWriter &w) { w.addTensor("u", {1, 1, 1, 1, 1}, {1}); }),
            "GGUF: tensor 'u' has 5 dimensions; ggml holds 1 to 4");
  EXPECT_EQ(message([](GgufWriter &w) { w.addTensor("u", {0}, {}); }),
            "GGUF: tensor 'u' has a dimension < 1");
  EXPECT_THROW(GgufWriter(24), RuntimeError);
}

TEST(GgufTest, ReadSafetensorsSomeReadsOnlyTheWantedBytes) {
  test::TempDir dir;
  std::string path = dir.file("c.safetensors");
  writeSafetensorsAtomic(path, {Tensor::fromF32("w", {2}, {1, 2}),
                                Tensor::fromF32("optimizer.adam_m.w", {2}, {3, 4})},
                         {{"fbt.model", "tiny"}});
  SafetensorsFile f = readSafetensorsSome(
      path, [](std::string_view name) { return name.rfind("optimizer.", 0) != 0; });
  EXPECT_EQ(f.at("w").toF32(), (std::vector<float>{1, 2}));
  EXPECT_TRUE(f.at("optimizer.adam_m.w").bytes.empty());
  EXPECT_EQ(f.at("optimizer.adam_m.w").shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(f.metadata.at("fbt.model"), "tiny");
}

// ggml's element types, checked against values worked out from their
// definitions (GgmlTypes.h), and laid out with their ggml type ids.
TEST(GgufTest, HalfBf16AndQ8_0) {
  EXPECT_EQ(ggml::halfFromFloat(1.0f), 0x3c00);
  EXPECT_EQ(ggml::halfFromFloat(-2.5f), 0xc100);
  EXPECT_EQ(ggml::halfFromFloat(65520.0f), 0x7c00);        // rounds past the largest: inf
  EXPECT_EQ(ggml::halfFromFloat(1.0f + 1.0f / 2048), 0x3c00); // a tie: to even
  EXPECT_EQ(ggml::bf16FromFloat(1.0f), 0x3f80);
  EXPECT_EQ(ggml::bf16FromFloat(1.00390625f), 0x3f80); // 1 + 2^-8, a tie: to even
  EXPECT_EQ(ggml::bf16FromFloat(1.01171875f), 0x3f82); // 1 + 3 * 2^-8, a tie: up to even
  EXPECT_EQ(ggml::bf16FromFloat(-0.0f), 0x8000);

  // One Q8_0 block: d = max|x| / 127 as a half, q = round(x / d).
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i)
    x[i] = (float)(i - 16) / 4; // -4 .. 3.75
  std::string block = ggml::encode(ggml::TensorType::Q8_0, x, 32);
  ASSERT_EQ(block.size(), 34u);
  float d = 4.0f / 127;
  EXPECT_EQ((uint8_t)block[0] | ((uint8_t)block[1] << 8), ggml::halfFromFloat(d));
  EXPECT_EQ((int8_t)block[2], -127);          // -4 / d
  EXPECT_EQ((int8_t)block[2 + 16], 0);        // 0
  EXPECT_EQ((int8_t)block[2 + 17], 8);        // 0.25 / d = 7.94
  EXPECT_EQ((int8_t)block[2 + 31], 119);      // 3.75 / d = 119.06
  std::vector<float> back = ggml::decode(ggml::TensorType::Q8_0, block, 32);
  for (int i = 0; i < 32; ++i)
    EXPECT_NEAR(back[i], x[i], 0.5f * ggml::floatFromHalf(ggml::halfFromFloat(d)) + 1e-3f);
  EXPECT_EQ(ggml::decode(ggml::TensorType::Q8_0, ggml::encode(ggml::TensorType::Q8_0,
                                                              std::vector<float>(32, 0), 32),
                         32),
            std::vector<float>(32, 0));

  GgufWriter w;
  w.addTensor("h", {2, 32}, std::vector<float>(64, 0.5f), ggml::TensorType::F16);
  w.addTensor("b", {32}, std::vector<float>(32, 0.5f), ggml::TensorType::BF16);
  w.addTensor("q", {2, 32}, std::vector<float>(64, 0.5f), ggml::TensorType::Q8_0);
  std::string bytes = w.serialize();
  Parsed p = parse(bytes, 32);
  ASSERT_EQ(p.tensors.size(), 3u);
  EXPECT_EQ(p.tensors[0].type, 1u);
  EXPECT_EQ(p.tensors[1].type, 30u);
  EXPECT_EQ(p.tensors[2].type, 8u);
  EXPECT_EQ(p.tensors[1].offset, 128u); // 64 halves
  EXPECT_EQ(p.tensors[2].offset, 192u); // then 32 bf16s
  EXPECT_EQ(bytes.size(), p.dataStart + 192 + 96); // 2 blocks of 34, padded to 96

  try {
    w.addTensor("down", {64, 172}, std::vector<float>(64 * 172), ggml::TensorType::Q8_0);
    FAIL() << "a row of 172 was quantized";
  } catch (const RuntimeError &e) {
    EXPECT_EQ(std::string(e.what()), "GGUF: tensor 'down' as q8_0: Q8_0 quantizes rows in "
                                     "blocks of 32; these rows have 172 values");
  }
  EXPECT_EQ(ggml::parseType("q8_0"), ggml::TensorType::Q8_0);
  EXPECT_THROW(ggml::parseType("q4_k"), RuntimeError);
}
