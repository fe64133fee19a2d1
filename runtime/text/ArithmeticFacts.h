//===- ArithmeticFacts.h - the arithmetic the default corpus teaches -*- C++ -*-===//
//
// One definition of the arithmetic facts: the embedded corpus writes them
// as lines ("12+7=19"), and `fbt eval --task arithmetic` asks the ones the
// corpus does not hold. Both draw from here, so the task asks exactly the
// kinds of facts the model was taught, and "held out" stays a property of
// the text, not of two copies kept alike:
//   one-digit sums (2 in 6), two-digit sums, differences of numbers below
//   100 (never negative), times tables to 12, three-digit sums and
//   differences (1 in 6 each).
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TEXT_ARITHMETICFACTS_H
#define FBT_RUNTIME_TEXT_ARITHMETICFACTS_H

#include <cstdint>
#include <string>
#include <utility>

namespace fbt {

/// A fact drawn with `range(lo, hi)`, a uniform integer in [lo, hi] (the
/// caller's random stream): the question ("12+7=") and its answer ("19").
template <class Range>
std::pair<std::string, std::string> arithmeticFact(Range &&range) {
  auto s = [](int64_t v) { return std::to_string(v); };
  int64_t a, b;
  switch (range(0, 5)) {
  case 0: // one-digit sums
  case 1:
    a = range(0, 9), b = range(0, 9);
    return {s(a) + "+" + s(b) + "=", s(a + b)};
  case 2: // two-digit sums
    a = range(10, 99), b = range(1, 99);
    return {s(a) + "+" + s(b) + "=", s(a + b)};
  case 3: // differences, never negative
    a = range(0, 99), b = range(0, a);
    return {s(a) + "-" + s(b) + "=", s(a - b)};
  case 4: // times tables
    a = range(1, 12), b = range(1, 12);
    return {s(a) + "*" + s(b) + "=", s(a * b)};
  default: // three-digit sums and differences
    a = range(100, 999), b = range(10, 999);
    if (range(0, 1) == 0)
      return {s(a) + "+" + s(b) + "=", s(a + b)};
    if (b > a)
      std::swap(a, b);
    return {s(a) + "-" + s(b) + "=", s(a - b)};
  }
}

} // namespace fbt

#endif // FBT_RUNTIME_TEXT_ARITHMETICFACTS_H
