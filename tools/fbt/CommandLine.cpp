//===- CommandLine.cpp - an fbt subcommand's options, on CLI11 ------------===//

#include "CommandLine.h"

#include "runtime/session/Session.h"

#include "runtime/base/Error.h"
#include "runtime/hal/cpu/CpuThreads.h"

#include <cstdio>

namespace fbt {

namespace {

/// "o,out" -> "-o,--out"; "ckpt" -> "--ckpt".
std::string cliNames(const std::string &names) {
  std::string out;
  size_t start = 0;
  while (start <= names.size()) {
    size_t comma = names.find(',', start);
    std::string n = names.substr(start, comma - start);
    out += (out.empty() ? "" : ",") + std::string(n.size() == 1 ? "-" : "--") + n;
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return out;
}

/// The long name reads use: "o,out" -> "out".
std::string longName(const std::string &names) {
  size_t comma = names.rfind(',');
  return comma == std::string::npos ? names : names.substr(comma + 1);
}

/// Words of `text` on lines of at most `width` characters.
std::string wrap(const std::string &text, size_t width) {
  std::string out, line, word;
  auto flush = [&] {
    if (word.empty())
      return;
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    word.clear();
  };
  for (char c : text) {
    if (c == ' ' || c == '\n') {
      flush();
      if (c == '\n') {
        out += line + "\n";
        line.clear();
      }
    } else {
      word += c;
    }
  }
  flush();
  return out + line;
}

/// CLI11 writes each option's help on one line, however long; this wraps it
/// to 80 columns (CLI11 indents the continuation lines).
class WrappingFormatter : public CLI::Formatter {
public:
  std::string make_option_desc(const CLI::Option *opt) const override {
    return wrap(opt->get_description(), 80 - get_column_width());
  }
};

} // namespace

CommandLine::CommandLine(const std::string &name, const std::string &synopsis)
    : app_(synopsis, name) {
  app_.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app_.allow_extras(); // reported below, with fbt's wording
  auto formatter = std::make_shared<WrappingFormatter>();
  formatter->column_width(26);
  app_.formatter(formatter);
  app_.add_option("--threads", threads_,
                  "threads for CPU steps (default: OMP_NUM_THREADS, else every "
                  "core)")
      ->type_name("N")
      ->check(
          [](const std::string &v) -> std::string {
            char *end = nullptr;
            long n = std::strtol(v.c_str(), &end, 10);
            if (v.empty() || *end || n < 1 || n > kMaxCpuThreads)
              return "expected a count from 1 to " + std::to_string(kMaxCpuThreads) +
                     ", got '" + v + "'";
            return "";
          });
}

CommandLine &CommandLine::text(const std::string &names, const std::string &value,
                               const std::string &help) {
  app_.add_option(cliNames(names), texts_[longName(names)], help)->type_name(value);
  return *this;
}

CommandLine &CommandLine::integer(const std::string &names,
                                  const std::string &value,
                                  const std::string &help) {
  app_.add_option(cliNames(names), integers_[longName(names)], help)
      ->type_name(value);
  return *this;
}

CommandLine &CommandLine::number(const std::string &names, const std::string &value,
                                 const std::string &help) {
  app_.add_option(cliNames(names), numbers_[longName(names)], help)
      ->type_name(value);
  return *this;
}

CommandLine &CommandLine::flag(const std::string &names, const std::string &help) {
  app_.add_flag(cliNames(names), flags_[longName(names)], help);
  return *this;
}

CommandLine &CommandLine::positional(const std::string &name,
                                     const std::string &help) {
  app_.add_option(name, texts_[name], help)->required()->type_name("");
  return *this;
}

CommandLine &CommandLine::positionals(const std::string &name,
                                      const std::string &help) {
  app_.add_option(name, many_, help)->type_name("");
  return *this;
}

CommandLine &CommandLine::footer(const std::string &text) {
  app_.footer(text);
  return *this;
}

CommandLine &CommandLine::tunable() {
  text("tune-cache", "FILE",
       "use the kernel choices `fbt tune` stored in FILE (default: this "
       "device's file under $XDG_CACHE_HOME/fbt/tune, when it has an entry "
       "for the bundle)");
  return flag("no-tune", "run the bundle's default kernels, ignoring any tune cache");
}

TuneOptions CommandLine::tuning() const {
  TuneOptions o;
  o.enabled = !has("no-tune");
  o.path = get("tune-cache");
  return o;
}

bool CommandLine::parse(int argc, char **argv) {
  // argv[1] is the command: CLI11 takes it as the program's name.
  try {
    app_.parse(argc - 1, argv + 1);
  } catch (const CLI::CallForHelp &) {
    std::fputs(app_.help().c_str(), stdout);
    return false;
  } catch (const CLI::ParseError &e) {
    throw RuntimeError(std::string(e.what()) + " (see --help)");
  }
  for (const std::string &extra : app_.remaining()) {
    if (extra.size() > 1 && extra[0] == '-') {
      std::string name = extra.substr(0, extra.find('='));
      throw RuntimeError("unknown option " + name + " (see --help)");
    }
    throw RuntimeError("unexpected argument '" + extra + "' (see --help)");
  }
  setCpuThreads(threads_);
  return true;
}

const CLI::Option *CommandLine::find(const std::string &name) const {
  const CLI::Option *o = app_.get_option_no_throw(name.size() == 1 ? "-" + name
                                                                   : "--" + name);
  return o ? o : app_.get_option_no_throw(name); // a positional
}

bool CommandLine::declares(const std::string &name) const { return find(name) != nullptr; }

const CLI::Option *CommandLine::option(const std::string &name) const {
  const CLI::Option *o = find(name);
  if (!o)
    throw std::logic_error("fbt: option --" + name + " was read but not declared");
  return o;
}

bool CommandLine::has(const std::string &name) const {
  return option(name)->count() > 0;
}

std::string CommandLine::get(const std::string &name,
                             const std::string &fallback) const {
  return has(name) ? texts_.at(name) : fallback;
}

int64_t CommandLine::getInt(const std::string &name, int64_t fallback) const {
  return has(name) ? integers_.at(name) : fallback;
}

double CommandLine::getDouble(const std::string &name, double fallback) const {
  return has(name) ? numbers_.at(name) : fallback;
}

const std::string &CommandLine::require(const std::string &name) const {
  return texts_.at(name);
}

std::unique_ptr<Session> openTrained(const CommandLine &args) {
  if (!args.has("ckpt"))
    throw RuntimeError("--ckpt is required (a checkpoint from fbt train)");
  auto session = std::make_unique<Session>(args.require("BUNDLE"));
  useTuning(*session, args.tuning());
  session->loadCheckpoint(args.get("ckpt"));
  if (args.declares("tokenizer") && args.has("tokenizer"))
    session->setTokenizer(args.get("tokenizer"));
  return session;
}

} // namespace fbt
