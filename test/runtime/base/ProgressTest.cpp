//===- ProgressTest.cpp - The terminal progress bar -----------------------===//

#include "runtime/base/Progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

using namespace fbt;

namespace {

/// Everything written to `f` so far.
std::string contents(std::FILE *f) {
  std::fflush(f);
  long size = std::ftell(f);
  std::string out(static_cast<size_t>(size), '\0');
  std::rewind(f);
  size_t got = std::fread(out.data(), 1, out.size(), f);
  out.resize(got);
  std::fseek(f, 0, SEEK_END);
  return out;
}

int count(const std::string &s, const std::string &what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos;
       at = s.find(what, at + 1))
    ++n;
  return n;
}

ProgressOptions quiet() {
  ProgressOptions o;
  o.out = nullptr;
  return o;
}

TEST(ProgressTest, RendersTheDocumentedLine) {
  ProgressBar bar(500, 0, quiet());
  bar.setField("loss", "2.31");
  bar.setTokensPerSecond(1234);
  EXPECT_EQ(bar.render(120, 60.0),
            "[##........] 120/500 steps  loss 2.31  1.2k tok/s  ETA 0:03:10");
  bar.setField("loss", "2.05"); // replaced in place
  bar.setField("k", "2");
  EXPECT_EQ(bar.render(500, 250.0),
            "[##########] 500/500 steps  loss 2.05  k 2  1.2k tok/s  ETA "
            "0:00:00");
  EXPECT_EQ(bar.render(0, 0.0), "[..........] 0/500 steps  loss 2.05  k 2  "
                                "1.2k tok/s  ETA -:--:--");
}

TEST(ProgressTest, EtaCountsOnlyStepsDoneSinceStart) {
  ProgressBar resumed(1000, 900, quiet());
  // 50 steps in 10 s since the resume: 50 more take another 10 s.
  EXPECT_EQ(resumed.render(950, 10.0),
            "[#########.] 950/1000 steps  ETA 0:00:10");
}

TEST(ProgressTest, Formats) {
  EXPECT_EQ(ProgressBar::formatCount(950), "950");
  EXPECT_EQ(ProgressBar::formatCount(1234), "1.2k");
  EXPECT_EQ(ProgressBar::formatCount(123456), "123.5k");
  EXPECT_EQ(ProgressBar::formatCount(2.5e6), "2.5M");
  EXPECT_EQ(ProgressBar::formatCount(3e9), "3.0G");
  EXPECT_EQ(ProgressBar::formatDuration(190), "0:03:10");
  EXPECT_EQ(ProgressBar::formatDuration(36005), "10:00:05");
  EXPECT_EQ(ProgressBar::formatDuration(-1), "-:--:--");
}

TEST(ProgressTest, NotATerminalPrintsALinePerTenPercent) {
  std::FILE *f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ProgressOptions o;
  o.out = f;
  o.tty = false;
  {
    ProgressBar bar(200, 0, o);
    for (int i = 1; i <= 200; ++i)
      bar.update(i);
    bar.finish();
  }
  std::string out = contents(f);
  EXPECT_EQ(count(out, "\n"), 10);
  EXPECT_EQ(count(out, "\r"), 0);
  EXPECT_NE(out.find("[#.........] 20/200 steps"), std::string::npos);
  EXPECT_NE(out.find("[##########] 200/200 steps"), std::string::npos);
  std::fclose(f);
}

TEST(ProgressTest, NotATerminalFinishShowsAnEarlyStop) {
  std::FILE *f = std::tmpfile();
  ProgressOptions o;
  o.out = f;
  o.tty = false;
  {
    ProgressBar bar(100, 50, o); // resumed at 50%
    bar.update(55);              // no new 10% yet
    bar.print("val loss 2.0");
    bar.finish(); // stopped early: still shows where
  }
  std::string out = contents(f);
  EXPECT_EQ(out.rfind("val loss 2.0\n[#####.....] 55/100 steps  ETA ", 0), 0u)
      << out;
  EXPECT_EQ(count(out, "\n"), 2);
  std::fclose(f);
}

TEST(ProgressTest, TerminalRedrawsInPlace) {
  std::FILE *f = std::tmpfile();
  ProgressOptions o;
  o.out = f;
  o.tty = true;
  o.minRedrawSeconds = 0;
  {
    ProgressBar bar(3, 0, o);
    bar.update(1);
    bar.print("checkpoint saved");
    bar.update(2);
    bar.update(3);
    bar.finish();
  }
  std::string out = contents(f);
  EXPECT_EQ(count(out, "\n"), 2); // the message and the final line
  EXPECT_NE(out.find("\r\x1b[Kcheckpoint saved\n"), std::string::npos);
  EXPECT_EQ(out.substr(out.size() - 1), "\n");
  EXPECT_NE(out.find("\r[##########] 3/3 steps"), std::string::npos);
  std::fclose(f);
}

TEST(ProgressTest, TerminalThrottlesRedraws) {
  std::FILE *f = std::tmpfile();
  ProgressOptions o;
  o.out = f;
  o.tty = true;
  o.minRedrawSeconds = 3600;
  {
    ProgressBar bar(1000, 0, o);
    for (int i = 1; i <= 1000; ++i)
      bar.update(i);
  }
  // The first update and the last (complete) one; nothing in between.
  EXPECT_EQ(count(contents(f), "\r"), 2);
  std::fclose(f);
}

} // namespace
