//===- Probe.cpp - linear probes of a model's residual stream -------------===//

#include "runtime/eval/Probe.h"

#include "runtime/base/Error.h"

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
  throw RuntimeError("unknown probe target '" + name + "' (targets: depth, indent, letter)");
}

const char *targetName(Target t) {
  switch (t) {
  case Target::Depth:
    return "depth";
  case Target::Indent:
    return "indent";
  case Target::Letter:
    return "letter";
  }
  return "?";
}

std::vector<double> targetValues(Target t, const std::vector<int32_t> &bytes) {
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
/// Solves A x = b for a symmetric positive definite A (n x n, row-major)
/// by Cholesky; A is overwritten.
std::vector<double> solveSpd(std::vector<double> a, std::vector<double> b, int64_t n) {
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
  for (int64_t i = 0; i < n; ++i) { // L z = b
    for (int64_t k = 0; k < i; ++k)
      b[i] -= a[i * n + k] * b[k];
    b[i] /= a[i * n + i];
  }
  for (int64_t i = n - 1; i >= 0; --i) { // L^T x = z
    for (int64_t k = i + 1; k < n; ++k)
      b[i] -= a[k * n + i] * b[k];
    b[i] /= a[i * n + i];
  }
  return b;
}
} // namespace

RidgeFit fitRidge(const std::vector<float> &features, int64_t width,
                  const std::vector<double> &y, const Parts &parts,
                  const std::vector<double> &lambdas) {
  const int64_t rows = (int64_t)y.size(), n = (int64_t)parts.train.size();
  if ((int64_t)features.size() != rows * width || n == 0)
    throw RuntimeError("probe: features and targets disagree, or no train rows");
  // Standardize on the train rows; center the target.
  std::vector<double> mean(width, 0), scale(width, 0);
  double yMean = 0;
  for (int64_t r : parts.train) {
    for (int64_t c = 0; c < width; ++c)
      mean[c] += features[r * width + c];
    yMean += y[r];
  }
  for (double &m : mean)
    m /= (double)n;
  yMean /= (double)n;
  for (int64_t r : parts.train)
    for (int64_t c = 0; c < width; ++c) {
      double v = features[r * width + c] - mean[c];
      scale[c] += v * v;
    }
  for (double &s : scale)
    s = std::sqrt(s / (double)n) + 1e-12;
  auto x = [&](int64_t r, int64_t c) { return (features[r * width + c] - mean[c]) / scale[c]; };
  // X^T X and X^T y over the train rows.
  std::vector<double> gram(width * width, 0), xty(width, 0);
  std::vector<double> row(width);
  for (int64_t r : parts.train) {
    for (int64_t c = 0; c < width; ++c)
      row[c] = x(r, c);
    for (int64_t i = 0; i < width; ++i) {
      xty[i] += row[i] * (y[r] - yMean);
      for (int64_t j = 0; j <= i; ++j)
        gram[i * width + j] += row[i] * row[j];
    }
  }
  for (int64_t i = 0; i < width; ++i)
    for (int64_t j = 0; j < i; ++j)
      gram[j * width + i] = gram[i * width + j];

  auto predict = [&](const std::vector<double> &w) {
    std::vector<double> p(rows, yMean);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < width; ++c)
        p[r] += w[c] * x(r, c);
    return p;
  };
  RidgeFit best;
  best.validationR2 = -INFINITY;
  for (double lambda : lambdas) {
    std::vector<double> a = gram;
    for (int64_t i = 0; i < width; ++i)
      a[i * width + i] += lambda * (double)n;
    std::vector<double> p = predict(solveSpd(a, xty, width));
    double v = rSquared(y, p, parts.validation);
    if (v > best.validationR2)
      best = {lambda, v, rSquared(y, p, parts.test)};
  }
  return best;
}

} // namespace fbt::probe
