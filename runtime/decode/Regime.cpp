//===- Regime.cpp - the decoding regimes by name --------------------------===//

#include "runtime/decode/Regime.h"

#include "runtime/base/Error.h"

namespace fbt {

Regime Regime::parse(const std::string &text) {
  Regime r;
  if (text == "standard") {
    r.kind = Kind::Standard;
  } else if (text == "soft") {
    r.kind = Kind::Soft;
  } else if (text.rfind("fused", 0) == 0) {
    r.kind = Kind::Fused;
    std::string n = text.substr(5);
    if (!n.empty()) {
      if (n.front() == ':')
        n = n.substr(1);
      else
        n = "?";
      if (n.empty())
        n = "?";
      size_t used = 0;
      try {
        r.passes = std::stoll(n, &used);
      } catch (...) {
        used = 0;
      }
      if (used != n.size() || r.passes < 1)
        throw RuntimeError("regime '" + text + "': fused takes a pass count >= 1, "
                           "as in fused:3");
    }
  } else {
    throw RuntimeError("unknown regime '" + text +
                       "' (expected standard, soft, fused or fused:N)");
  }
  return r;
}

std::string Regime::name() const {
  switch (kind) {
  case Kind::Standard:
    return "standard";
  case Kind::Soft:
    return "soft";
  case Kind::Fused:
    return "fused:" + std::to_string(passes);
  }
  return "?";
}

} // namespace fbt
