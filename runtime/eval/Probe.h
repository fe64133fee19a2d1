//===- Probe.h - linear probes of a model's residual stream -------*- C++ -*-===//
//
// What `fbt probe` fits: targets that are a function of a window's whole
// prefix (not of its last byte alone), read off one layer's residual stream
// by ridge regression, the regularization chosen on a validation part of
// the windows and the fit scored on a test part (R^2).
//
//   depth   bracket nesting depth: ( [ { open, ) ] } close, from the
//           window's start
//   indent  the current line's indentation: its leading spaces (a tab
//           counts 4), as far as the position has read them
//   letter  the control: whether the current byte is a letter, a function
//           of that byte alone, which any layer's state should give
//   value   the depth task's running value (scripts/depth_task.py): inside a
//           problem line "$7++-=8" the digit after the updates read so far;
//           in "$0:04 11|..." (perm5) the position after the lookups read so
//           far, a permutation applied at the pair that moves the current
//           position. A class (0-9), read by one-vs-rest probes and scored by
//           accuracy; probed at the lines' other bytes than digits (updates,
//           ':', ' ', '|', '='), where the current byte does not name the
//           value, and nowhere outside problem lines
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_EVAL_PROBE_H
#define FBT_RUNTIME_EVAL_PROBE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fbt::probe {

enum class Target { Depth, Indent, Letter, Value };

/// "depth", "indent", "letter" or "value"; a RuntimeError naming the
/// choices else.
Target parseTarget(const std::string &name);
const char *targetName(Target t);

/// Whether the target is a class (scored by accuracy) rather than a
/// quantity (scored by R^2).
bool isClassTarget(Target t);

/// The target at every position of a window of bytes; NaN where it is not
/// defined (value: outside a problem line).
std::vector<double> targetValues(Target t, const std::vector<int32_t> &bytes);

/// Rows of `features` (row-major, `width` columns) split into the parts a
/// probe is fitted, chosen and scored on.
struct Parts {
  std::vector<int64_t> train, validation, test;
};

struct RidgeFit {
  double lambda = 0;       ///< the regularization chosen, per row of train
  double validationR2 = 0; ///< its R^2 on the validation rows
  double testR2 = 0;       ///< and on the test rows
};

/// Ridge regression of y on the features (standardized on the train rows,
/// with an intercept), for each regularization in `lambdas` (times the
/// train rows); the one with the best validation R^2 is scored on test.
RidgeFit fitRidge(const std::vector<float> &features, int64_t width,
                  const std::vector<double> &y, const Parts &parts,
                  const std::vector<double> &lambdas = {1e-4, 1e-3, 1e-2, 1e-1, 1, 10});

/// `parts` less the rows where y is not defined (NaN).
Parts definedRows(const Parts &parts, const std::vector<double> &y);

struct ClassFit {
  double lambda = 0;
  double validationAccuracy = 0;
  double testAccuracy = 0;
  /// The floor: the share of test rows in the train rows' most common class.
  double majority = 0;
};

/// One ridge regression per class onto its indicator (the features
/// standardized on the train rows, one shared Gram matrix), the predicted
/// class the highest; the regularization with the best validation accuracy
/// is scored on test. `labels` are small non-negative integers.
ClassFit fitRidgeClasses(const std::vector<float> &features, int64_t width,
                         const std::vector<double> &labels, const Parts &parts,
                         const std::vector<double> &lambdas = {1e-4, 1e-3, 1e-2, 1e-1, 1, 10});

/// 1 - SS_res / SS_tot over `rows` (SS_tot about their own mean); 0 where
/// the target does not vary.
double rSquared(const std::vector<double> &y, const std::vector<double> &prediction,
                const std::vector<int64_t> &rows);

} // namespace fbt::probe

#endif // FBT_RUNTIME_EVAL_PROBE_H
