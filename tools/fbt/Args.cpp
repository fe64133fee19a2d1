//===- Args.cpp - the fbt CLI's option parsing --------------------------===//

#include "Args.h"

#include "runtime/Error.h"

namespace fbt {

Args::Args(int argc, char **argv, int first, const std::set<std::string> &valued,
           const std::set<std::string> &flags) {
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    // Short options are one letter after one dash (-o FILE).
    bool shortOption = a.size() == 2 && a[0] == '-' && a[1] != '-' &&
                       (valued.count(a.substr(1)) || flags.count(a.substr(1)));
    if (!shortOption && (a.rfind("--", 0) != 0 || a == "--")) {
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(shortOption ? 1 : 2), value;
    size_t eq = name.find('=');
    bool inlineValue = eq != std::string::npos;
    if (inlineValue) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (flags.count(name)) {
      if (inlineValue)
        throw RuntimeError("option --" + name + " takes no value");
      values_[name] = "1";
    } else if (valued.count(name)) {
      if (!inlineValue) {
        if (i + 1 >= argc)
          throw RuntimeError("option --" + name + " needs a value");
        value = argv[++i];
      }
      values_[name] = value;
    } else {
      throw RuntimeError("unknown option --" + name + " (see --help)");
    }
  }
}

std::string Args::get(const std::string &name, const std::string &fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

int64_t Args::getInt(const std::string &name, int64_t fallback) const {
  if (!has(name))
    return fallback;
  const std::string &v = values_.at(name);
  size_t used = 0;
  long long x = 0;
  try {
    x = std::stoll(v, &used);
  } catch (...) {
    used = 0;
  }
  if (used != v.size() || v.empty())
    throw RuntimeError("option --" + name + ": expected an integer, got '" + v + "'");
  return x;
}

double Args::getDouble(const std::string &name, double fallback) const {
  if (!has(name))
    return fallback;
  const std::string &v = values_.at(name);
  size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (...) {
    used = 0;
  }
  if (used != v.size() || v.empty())
    throw RuntimeError("option --" + name + ": expected a number, got '" + v + "'");
  return x;
}

const std::string &Args::require(size_t i, const std::string &what) const {
  if (i >= positional_.size())
    throw RuntimeError("missing " + what + " (see --help)");
  return positional_[i];
}

} // namespace fbt
