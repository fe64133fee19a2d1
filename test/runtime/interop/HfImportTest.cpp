//===- HfImportTest.cpp - fbt import's conversion, apart from the CLI -----===//

#include "runtime/interop/HfImport.h"

#include "runtime/base/Error.h"
#include "runtime/text/Gpt2Vocabulary.h"

#include "../TempDir.h"

#include <gtest/gtest.h>

using namespace fbt;

namespace {

TEST(HfImportTest, ASpecNameIsTheFoldersMadeSafe) {
  EXPECT_EQ(hf::specName("models/Llama 3.2 (1B)"), "Llama-3.2--1B-");
  EXPECT_EQ(hf::specName("models/tiny/"), "tiny");
  EXPECT_EQ(hf::specName(std::string(80, 'a')).size(), 64u);
}

TEST(HfImportTest, TheSpecIsThePlainModelOrAnFbtStartingAsIt) {
  llama::Hyperparameters h;
  h.name = "m";
  h.vocab = 256, h.hidden = 64, h.layers = 2, h.heads = 4, h.intermediate = 172;
  h.contextLength = 512, h.rmsNormEps = 1e-5, h.ropeTheta = 1e4, h.bosTokenId = 0;
  Json plain = hf::importedSpec(h, false, {128, 64, 256});
  EXPECT_EQ(plain.at("feedback").at("fusion"), "none");
  EXPECT_EQ(plain.at("training").at("sequence_length"), 128);
  EXPECT_EQ(plain.at("inference").at("max_prompt_length"), 64);
  EXPECT_EQ(plain.at("inference").at("max_sequence_length"), 256);
  EXPECT_FALSE(plain.contains("rope_scaling"));
  Json fbt = hf::importedSpec(h, true, {128, 64, 256});
  EXPECT_EQ(fbt.at("feedback").at("fusion"), "glu");
  EXPECT_EQ(fbt.at("feedback").at("depth_scaling"), false)
      << "its standard regime must be the imported model";
}

// The byte vocabulary (what fbt export --hf writes for a byte-level run)
// comes back as "bytes", copying nothing; a folder without a tokenizer is
// named.
TEST(HfImportTest, TheByteVocabularyImportsAsBytes) {
  test::TempDir dir;
  writeFileAtomic(dir.file("tokenizer.json"), {gpt2::tokenizerJson(gpt2::byteVocabulary())});
  hf::ImportedTokenizer tok = hf::importTokenizer(dir.path());
  EXPECT_EQ(tok.kind, "bytes");
  EXPECT_EQ(tok.vocab, 256);
  FileSet out;
  EXPECT_EQ(hf::placeTokenizer(tok, dir.file("m"), out), "bytes");

  test::TempDir empty;
  try {
    hf::importTokenizer(empty.path());
    FAIL() << "no error";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("no tokenizer.json or tokenizer.model"),
              std::string::npos) << e.what();
  }
}

} // namespace
