//===- Probe.cpp - linear probes of a model's residual stream -------------===//

#include "runtime/eval/Probe.h"

#include "runtime/base/Error.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace fbt::probe {

Target parseTarget(const std::string &name) {
  if (name == "depth")
    return Target::Depth;
  if (name == "indent")
    return Target::Indent;
  if (name == "letter")
    return Target::Letter;
  if (name == "value")
    return Target::Value;
  throw RuntimeError("unknown probe target '" + name +
                     "' (targets: depth, indent, letter, value)");
}

const char *targetName(Target t) {
  switch (t) {
  case Target::Depth:
    return "depth";
  case Target::Indent:
    return "indent";
  case Target::Letter:
    return "letter";
  case Target::Value:
    return "value";
  }
  return "?";
}

bool isClassTarget(Target t) { return t == Target::Value; }

namespace {
/// The depth task's running value along a window (Probe.h), NaN outside
/// problem lines and at their digits. A line is a problem from a '$' at its start (after a
/// newline or BOS) to its newline; one that stops parsing stops there.
std::vector<double> runningValues(const std::vector<int32_t> &bytes) {
  const double none = std::nan("");
  std::vector<double> out(bytes.size(), none);
  enum class State { Outside, Start, Digits, Perm, PermPair, Answer } state = State::Outside;
  int value = 0, pairFrom = -1;
  bool moved = false; // perm5: the current permutation has moved the position
  for (size_t i = 0; i < bytes.size(); ++i) {
    int c = bytes[i];
    bool lineStart = i > 0 && (bytes[i - 1] == '\n' || bytes[i - 1] == 0);
    bool digit = c >= '0' && c <= '9';
    switch (state) {
    case State::Outside:
      if (c == '$' && lineStart)
        state = State::Start;
      continue; // '$' itself: nothing read yet
    case State::Start:
      state = digit ? State::Digits : State::Outside;
      value = c - '0';
      break;
    case State::Digits: // the digit form's updates, or perm5's ':'
      if (c == ':' && value < 5)
        state = State::Perm, moved = false, pairFrom = -1;
      else if (c == '+')
        value = (value + 1) % 10;
      else if (c == '-')
        value = (value + 9) % 10;
      else if (c == '*')
        value = value * 3 % 10;
      else if (c == '/')
        value = value * 7 % 10;
      else if (c == '=')
        state = State::Answer;
      else
        state = State::Outside;
      break;
    case State::Perm: // between pairs
      if (c >= '0' && c <= '4')
        pairFrom = c - '0', state = State::PermPair;
      else if (c == '|')
        moved = false;
      else if (c == '=')
        state = State::Answer;
      else if (c != ' ')
        state = State::Outside;
      break;
    case State::PermPair: // "i j": i read, j now
      if (c >= '0' && c <= '4') {
        if (pairFrom == value && !moved)
          value = c - '0', moved = true;
        state = State::Perm;
      } else {
        state = State::Outside;
      }
      break;
    case State::Answer: // the answer digit, then the newline ends the line
      if (!digit)
        state = State::Outside;
      break;
    }
    // Digits name a value themselves (the start, a pair's target, the
    // answer): the target is probed where the current byte does not.
    if (state != State::Outside && !digit)
      out[i] = value;
  }
  return out;
}
} // namespace

std::vector<double> targetValues(Target t, const std::vector<int32_t> &bytes) {
  if (t == Target::Value)
    return runningValues(bytes);
  std::vector<double> out(bytes.size());
  int64_t depth = 0, indent = 0;
  bool leading = true; // still in the current line's leading whitespace
  for (size_t i = 0; i < bytes.size(); ++i) {
    int c = bytes[i];
    if (c == '(' || c == '[' || c == '{')
      ++depth;
    else if ((c == ')' || c == ']' || c == '}') && depth > 0)
      --depth;
    if (c == '\n') {
      indent = 0, leading = true;
    } else if (leading && (c == ' ' || c == '\t')) {
      indent += c == '\t' ? 4 : 1;
    } else {
      leading = false;
    }
    switch (t) {
    case Target::Depth:
      out[i] = (double)depth;
      break;
    case Target::Indent:
      out[i] = (double)indent;
      break;
    case Target::Letter:
      out[i] = (c >= 0 && c < 256 && std::isalpha(c)) ? 1.0 : 0.0;
      break;
    case Target::Value:
      break;
    }
  }
  return out;
}

double rSquared(const std::vector<double> &y, const std::vector<double> &prediction,
                const std::vector<int64_t> &rows) {
  if (rows.empty())
    return 0;
  double mean = 0;
  for (int64_t r : rows)
    mean += y[r];
  mean /= (double)rows.size();
  double res = 0, tot = 0;
  for (int64_t r : rows) {
    res += (y[r] - prediction[r]) * (y[r] - prediction[r]);
    tot += (y[r] - mean) * (y[r] - mean);
  }
  return tot > 0 ? 1 - res / tot : 0;
}

namespace {
/// The Cholesky factor L (lower, row-major, n x n) of a symmetric positive
/// definite A.
std::vector<double> cholesky(std::vector<double> a, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (int64_t k = 0; k < j; ++k)
      d -= a[j * n + k] * a[j * n + k];
    if (d <= 0)
      throw RuntimeError("the probe's normal equations are not positive definite");
    d = std::sqrt(d);
    a[j * n + j] = d;
    for (int64_t i = j + 1; i < n; ++i) {
      double s = a[i * n + j];
      for (int64_t k = 0; k < j; ++k)
        s -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = s / d;
    }
  }
  return a;
}

/// Solves L L^T x = b.
std::vector<double> solveFactored(const std::vector<double> &l, std::vector<double> b,
                                  int64_t n) {
  for (int64_t i = 0; i < n; ++i) { // L z = b
    for (int64_t k = 0; k < i; ++k)
      b[i] -= l[i * n + k] * b[k];
    b[i] /= l[i * n + i];
  }
  for (int64_t i = n - 1; i >= 0; --i) { // L^T x = z
    for (int64_t k = i + 1; k < n; ++k)
      b[i] -= l[k * n + i] * b[k];
    b[i] /= l[i * n + i];
  }
  return b;
}

/// The features standardized on the train rows and their Gram matrix
/// there: what every ridge fit on them shares.
struct Design {
  const std::vector<float> &features;
  const int64_t width;
  const std::vector<int64_t> &train;
  std::vector<double> mean, scale, gram;

  Design(const std::vector<float> &f, int64_t w, const std::vector<int64_t> &t)
      : features(f), width(w), train(t), mean(w, 0), scale(w, 0), gram(w * w, 0) {
    const double n = (double)train.size();
    for (int64_t r : train)
      for (int64_t c = 0; c < width; ++c)
        mean[c] += features[r * width + c];
    for (double &m : mean)
      m /= n;
    for (int64_t r : train)
      for (int64_t c = 0; c < width; ++c) {
        double v = features[r * width + c] - mean[c];
        scale[c] += v * v;
      }
    for (double &s : scale)
      s = std::sqrt(s / n) + 1e-12;
    std::vector<double> row(width);
    for (int64_t r : train) {
      for (int64_t c = 0; c < width; ++c)
        row[c] = x(r, c);
      for (int64_t i = 0; i < width; ++i)
        for (int64_t j = 0; j <= i; ++j)
          gram[i * width + j] += row[i] * row[j];
    }
    for (int64_t i = 0; i < width; ++i)
      for (int64_t j = 0; j < i; ++j)
        gram[j * width + i] = gram[i * width + j];
  }

  double x(int64_t r, int64_t c) const { return (features[r * width + c] - mean[c]) / scale[c]; }

  /// X^T (y - offset) over the train rows.
  std::vector<double> xty(const std::vector<double> &y, double offset) const {
    std::vector<double> out(width, 0);
    for (int64_t r : train)
      for (int64_t c = 0; c < width; ++c)
        out[c] += x(r, c) * (y[r] - offset);
    return out;
  }

  /// The factor of X^T X + lambda n I.
  std::vector<double> factor(double lambda) const {
    std::vector<double> a = gram;
    for (int64_t i = 0; i < width; ++i)
      a[i * width + i] += lambda * (double)train.size();
    return cholesky(std::move(a), width);
  }

  double predict(const std::vector<double> &w, double offset, int64_t r) const {
    double p = offset;
    for (int64_t c = 0; c < width; ++c)
      p += w[c] * x(r, c);
    return p;
  }
};

void checkShapes(const std::vector<float> &features, int64_t width, size_t rows,
                 const Parts &parts) {
  if ((int64_t)features.size() != (int64_t)rows * width || parts.train.empty())
    throw RuntimeError("probe: features and targets disagree, or no train rows");
}
} // namespace

RidgeFit fitRidge(const std::vector<float> &features, int64_t width,
                  const std::vector<double> &y, const Parts &parts,
                  const std::vector<double> &lambdas) {
  checkShapes(features, width, y.size(), parts);
  Design design(features, width, parts.train);
  double yMean = 0;
  for (int64_t r : parts.train)
    yMean += y[r];
  yMean /= (double)parts.train.size();
  const std::vector<double> xty = design.xty(y, yMean);
  RidgeFit best;
  best.validationR2 = -INFINITY;
  for (double lambda : lambdas) {
    std::vector<double> w = solveFactored(design.factor(lambda), xty, width);
    std::vector<double> p(y.size(), yMean);
    for (const auto *rows : {&parts.validation, &parts.test})
      for (int64_t r : *rows)
        p[r] = design.predict(w, yMean, r);
    double v = rSquared(y, p, parts.validation);
    if (v > best.validationR2)
      best = {lambda, v, rSquared(y, p, parts.test)};
  }
  return best;
}

ClassFit fitRidgeClasses(const std::vector<float> &features, int64_t width,
                         const std::vector<double> &labels, const Parts &parts,
                         const std::vector<double> &lambdas) {
  checkShapes(features, width, labels.size(), parts);
  int64_t classes = 0;
  for (double v : labels)
    if (std::isfinite(v)) {
      if (v < 0 || v != std::floor(v) || v > 1000)
        throw RuntimeError("probe: a class label is not a small non-negative integer");
      classes = std::max(classes, (int64_t)v + 1);
    }
  Design design(features, width, parts.train);
  std::vector<std::vector<double>> xty(classes);
  std::vector<double> prior(classes, 0); // each indicator's train mean
  for (int64_t r : parts.train)
    prior[(int64_t)labels[r]] += 1.0 / (double)parts.train.size();
  for (int64_t k = 0; k < classes; ++k) {
    std::vector<double> indicator(labels.size());
    for (size_t r = 0; r < labels.size(); ++r)
      indicator[r] = labels[r] == (double)k ? 1.0 : 0.0;
    xty[k] = design.xty(indicator, prior[k]);
  }
  auto accuracy = [&](const std::vector<std::vector<double>> &w, const std::vector<int64_t> &rows) {
    int64_t right = 0;
    for (int64_t r : rows) {
      int64_t argmax = 0;
      double best = -INFINITY;
      for (int64_t k = 0; k < classes; ++k) {
        double s = design.predict(w[k], prior[k], r);
        if (s > best)
          best = s, argmax = k;
      }
      right += argmax == (int64_t)labels[r];
    }
    return rows.empty() ? 0.0 : (double)right / (double)rows.size();
  };
  ClassFit best;
  best.validationAccuracy = -1;
  for (double lambda : lambdas) {
    std::vector<double> l = design.factor(lambda);
    std::vector<std::vector<double>> w(classes);
    for (int64_t k = 0; k < classes; ++k)
      w[k] = solveFactored(l, xty[k], width);
    double v = accuracy(w, parts.validation);
    if (v > best.validationAccuracy)
      best = {lambda, v, accuracy(w, parts.test), 0};
  }
  int64_t common = std::max_element(prior.begin(), prior.end()) - prior.begin();
  int64_t inCommon = 0;
  for (int64_t r : parts.test)
    inCommon += labels[r] == (double)common;
  best.majority = parts.test.empty() ? 0 : (double)inCommon / (double)parts.test.size();
  return best;
}

Parts definedRows(const Parts &parts, const std::vector<double> &y) {
  Parts out;
  auto keep = [&](const std::vector<int64_t> &from, std::vector<int64_t> &to) {
    for (int64_t r : from)
      if (std::isfinite(y[r]))
        to.push_back(r);
  };
  keep(parts.train, out.train);
  keep(parts.validation, out.validation);
  keep(parts.test, out.test);
  return out;
}

} // namespace fbt::probe
