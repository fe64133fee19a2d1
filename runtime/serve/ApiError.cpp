//===- ApiError.cpp - an error the server answers with --------------------===//

#include "runtime/serve/ApiError.h"

#include "runtime/base/Json.h"

namespace fbt {

std::string ApiError::body() const {
  return dumpJson(Json::object(
      {{"error", Json::object({{"message", message},
                               {"type", type},
                               {"param", param.empty() ? Json() : Json(param)},
                               {"code", status == 401 ? Json("invalid_api_key") : Json()}})}}));
}

} // namespace fbt
