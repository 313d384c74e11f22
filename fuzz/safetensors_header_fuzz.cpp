// libFuzzer entry point for the safetensors header parser: any input must either parse or throw
// dsv4::error; anything else (another exception, a crash, an ASan report) is a finding.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The first byte, when present, picks how much of the data section lies beyond the input, so
  // offsets both inside and past the file are reachable.
  const uint64_t extra = size > 0 ? data[0] : 0;
  try {
    dsv4::parse_safetensors_header(data, size, size + extra, "fuzz");
  } catch (const dsv4::error&) {
  }
  return 0;
}
