//===- CheckpointExportTest.cpp - fbt export's conversion, apart from the CLI ===//

#include "runtime/interop/CheckpointExport.h"

#include "runtime/base/Error.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace fbt;

namespace {

TEST(CheckpointExportTest, AByteRunExportsTheByteVocabularyWithItsSeparatorAPlainByte) {
  SafetensorsFile ckpt; // no fbt.tokenizer: a byte-level run
  RunVocabulary v = runVocabulary(ckpt, "run.safetensors");
  EXPECT_EQ(v.tokenizer, "bytes");
  EXPECT_EQ(v.vocabulary.tokens.size(), 256u);
  llama::BpeVocabulary g = ggufVocabulary(v);
  EXPECT_EQ(g.tokens.size(), 256u);
  EXPECT_EQ(g.separator, v.separator);
  EXPECT_TRUE(g.control.empty()) << "byte 0 stays a plain byte";
}

TEST(CheckpointExportTest, ASentencePieceRunIsRefusedByName) {
  SafetensorsFile ckpt;
  ckpt.metadata["fbt.tokenizer"] = "sp:m.model";
  try {
    runVocabulary(ckpt, "run.safetensors");
    FAIL() << "no error";
  } catch (const RuntimeError &e) {
    std::string what = e.what();
    EXPECT_NE(what.find("run.safetensors"), std::string::npos) << what;
    EXPECT_NE(what.find("SentencePiece is not exported yet"), std::string::npos) << what;
  }
}

TEST(CheckpointExportTest, AGpt2RunsSeparatorBecomesAControlToken) {
  RunVocabulary v;
  v.tokenizer = "gpt2:vocab";
  v.vocabulary.tokens = {{"a", 0}, {"b", 1}, {"<|endoftext|>", 2}};
  v.vocabulary.merges = {{"a", "b"}};
  v.separator = 2;
  llama::BpeVocabulary g = ggufVocabulary(v);
  EXPECT_EQ(g.merges, std::vector<std::string>{"a b"});
  EXPECT_NE(std::find(g.control.begin(), g.control.end(), 2), g.control.end());
}

} // namespace
