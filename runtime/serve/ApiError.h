//===- ApiError.h - an error the server answers with -------------*- C++ -*-===//
//
// What a request's handling throws to be answered with an HTTP status and
// OpenAI's error object: the protocol's parsers, the response format's and
// the engine's admission all raise it, so it stands apart from each.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_SERVE_APIERROR_H
#define FBT_RUNTIME_SERVE_APIERROR_H

#include "runtime/base/Error.h"

#include <string>
#include <utility>

namespace fbt {

struct ApiError {
  /// The message quotes the request's own text (a field's name, a role, a
  /// model), so it is kept to one line here (oneLine, Error.h).
  ApiError(int status, const std::string &message, std::string param = "",
           std::string type = "invalid_request_error")
      : status(status), message(oneLine(message)), param(std::move(param)),
        type(std::move(type)) {}
  int status = 400;
  std::string message, param;
  std::string type = "invalid_request_error";
  /// {"error": {"message", "type", "param", "code"}}; the code is null but
  /// for a 401, which OpenAI marks "invalid_api_key".
  std::string body() const;
};

} // namespace fbt

#endif // FBT_RUNTIME_SERVE_APIERROR_H
