// libFuzzer entry point for config.json parsing (parse_model_config + validate_model_config): any
// JSON document must either give a valid config or throw dsv4::error; anything else (another
// exception, a crash, an ASan report, a hang) is a finding. Inputs that are not JSON are skipped
// (nlohmann's parser is not under test; load_model_config wraps its errors).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json json =
      nlohmann::json::parse(data, data + size, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;
  try {
    const dsv4::model_config config = dsv4::parse_model_config(json, "fuzz");
    dsv4::validate_model_config(config, "fuzz");
  } catch (const dsv4::error&) {
  }
  return 0;
}
