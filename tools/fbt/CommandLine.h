//===- CommandLine.h - an fbt subcommand's options, on CLI11 ---*- C++ -*-===//
//
// Each subcommand declares its options with their help; CLI11 parses them
// (`--name value`, `--name=value`, `-o value`, flags, positionals), converts
// typed values and writes `--help`. What this adds is fbt's conventions:
//  - errors are RuntimeErrors (one line, exit status 2) that name the option
//    and end with "(see --help)"; an unknown option reads
//    "unknown option --stpes (see --help)";
//  - an option given twice keeps its last value;
//  - every command takes --threads N (the CPU steps' thread count);
//  - reads by name with the caller's fallback, so a default that depends on
//    the bundle (say, the served model's name) stays at the call site.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_TOOLS_FBT_COMMANDLINE_H
#define FBT_TOOLS_FBT_COMMANDLINE_H

#include <CLI/CLI.hpp>

#include "runtime/tune/Tuner.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fbt {

class CommandLine {
public:
  /// `name` is "fbt generate"; `synopsis` the first line of --help.
  CommandLine(const std::string &name, const std::string &synopsis);

  // Declarations. `names` is CLI11's spelling without dashes for long
  // names, "o,out" for a short alias; reads use the long name. `value` names
  // the value in --help (CKPT, N).
  CommandLine &text(const std::string &names, const std::string &value,
                    const std::string &help);
  CommandLine &integer(const std::string &names, const std::string &value,
                       const std::string &help);
  CommandLine &number(const std::string &names, const std::string &value,
                      const std::string &help);
  CommandLine &flag(const std::string &names, const std::string &help);
  /// A required positional (BUNDLE).
  CommandLine &positional(const std::string &name, const std::string &help);
  /// Any number of positionals (FILE...).
  CommandLine &positionals(const std::string &name, const std::string &help);
  /// Prose after the options in --help.
  CommandLine &footer(const std::string &text);
  /// --tune-cache FILE and --no-tune, for commands that run steps
  /// (runtime/tune/Tuner.h); read back by tuning().
  CommandLine &tunable();
  TuneOptions tuning() const;

  /// Parses argv[2..] (after "fbt <command>") and applies --threads. Returns
  /// false when --help was asked for (and printed: exit 0); bad options
  /// throw RuntimeError.
  bool parse(int argc, char **argv);

  /// Whether the option was given.
  bool has(const std::string &name) const;
  /// Whether the command declares it.
  bool declares(const std::string &name) const;
  std::string get(const std::string &name, const std::string &fallback = "") const;
  int64_t getInt(const std::string &name, int64_t fallback) const;
  double getDouble(const std::string &name, double fallback) const;
  /// The positional declared as `name`.
  const std::string &require(const std::string &name) const;
  /// The positionals declared with positionals().
  const std::vector<std::string> &positional() const { return many_; }

  std::string help() const { return app_.help(); }

private:
  const CLI::Option *find(const std::string &name) const;
  const CLI::Option *option(const std::string &name) const;

  CLI::App app_;
  int threads_ = 0;
  // Option storage; std::map keeps the references CLI11 binds stable.
  std::map<std::string, std::string> texts_;
  std::map<std::string, int64_t> integers_;
  std::map<std::string, double> numbers_;
  std::map<std::string, bool> flags_;
  std::vector<std::string> many_;
};

class Session;
/// A trained model's session, as the commands that run one open it: BUNDLE
/// on its device, the tune cache's choice applied (--tune-cache,
/// --no-tune), --ckpt's weights (required) and, where the command declares
/// --tokenizer and it is given, that tokenizer instead of the run's.
std::unique_ptr<Session> openTrained(const CommandLine &args);

} // namespace fbt

#endif // FBT_TOOLS_FBT_COMMANDLINE_H
