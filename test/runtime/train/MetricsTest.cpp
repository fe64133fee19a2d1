//===- MetricsTest.cpp - JSONL metrics ------------------------------------===//

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/train/MetricsLog.h"

#include "test/runtime/TempDir.h"

#include <gtest/gtest.h>

#include <fstream>

using namespace fbt;

namespace {

std::vector<std::string> lines(const std::string &path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

Json record(int step, double loss) {
  Json r;
  r["step"] = step;
  r["loss"] = loss;
  return r;
}

TEST(MetricsTest, OneObjectPerLineVisibleAtOnce) {
  test::TempDir dir;
  std::string path = dir.file("metrics.jsonl");
  MetricsWriter w(path, MetricsWriter::Mode::Truncate);
  w.write(record(0, 5.5));
  // Readable before the writer is closed: every line is flushed.
  EXPECT_EQ(readFile(path), "{\"step\":0,\"loss\":5.5}\n");
  Json r = record(1, 4.25);
  r["loss_k"] = Json::array({4.5, 4.0});
  w.write(r);
  std::vector<std::string> ls = lines(path);
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_EQ(parseJson(ls[1]), r);
  EXPECT_THROW(w.write(Json::array({1})), RuntimeError);
}

TEST(MetricsTest, TruncateOrAppend) {
  test::TempDir dir;
  std::string path = dir.file("m.jsonl");
  {
    MetricsWriter w(path, MetricsWriter::Mode::Truncate);
    w.write(record(0, 1));
    w.write(record(1, 1));
  }
  {
    MetricsWriter w(path, MetricsWriter::Mode::Append); // resume
    w.write(record(2, 1));
  }
  EXPECT_EQ(lines(path).size(), 3u);
  {
    MetricsWriter w(path, MetricsWriter::Mode::Truncate); // fresh run
    w.write(record(0, 2));
  }
  EXPECT_EQ(lines(path).size(), 1u);
}

TEST(MetricsTest, AppendEndsALineCutShortByACrash) {
  test::TempDir dir;
  std::string path = dir.file("m.jsonl");
  std::ofstream(path) << "{\"step\":0}\n{\"step\":1,\"lo";
  {
    MetricsWriter w(path, MetricsWriter::Mode::Append);
    w.write(record(2, 3));
  }
  std::vector<std::string> ls = lines(path);
  ASSERT_EQ(ls.size(), 3u);
  EXPECT_EQ(ls[1], "{\"step\":1,\"lo");
  EXPECT_EQ(asInt(jsonAt(parseJson(ls[2]), "step")), 2);
}

TEST(MetricsTest, UnwritablePathIsAnError) {
  test::TempDir dir;
  EXPECT_THROW(MetricsWriter(dir.file("no/such/dir/m.jsonl"),
                             MetricsWriter::Mode::Append),
               RuntimeError);
}

} // namespace
