//===- Args.h - the fbt CLI's option parsing -------------------------*- C++ -*-===//
//
// `--name value`, `--name=value`, `--flag`, and one-letter names as `-o
// value`; positionals in order. Unknown
// options and missing values are errors naming the option.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_TOOLS_FBT_ARGS_H
#define FBT_TOOLS_FBT_ARGS_H

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fbt {

class Args {
public:
  /// `valued` take a value, `flags` do not.
  Args(int argc, char **argv, int first, const std::set<std::string> &valued,
       const std::set<std::string> &flags);

  bool has(const std::string &name) const { return values_.count(name) != 0; }
  std::string get(const std::string &name, const std::string &fallback = "") const;
  int64_t getInt(const std::string &name, int64_t fallback) const;
  double getDouble(const std::string &name, double fallback) const;
  const std::vector<std::string> &positional() const { return positional_; }
  /// The i-th positional, or an error saying `what` is missing.
  const std::string &require(size_t i, const std::string &what) const;

private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

} // namespace fbt

#endif // FBT_TOOLS_FBT_ARGS_H
