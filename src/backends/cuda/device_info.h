#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dsv4::cuda {

struct device_info {
  int index = 0;
  std::string name;
  int major = 0;
  int minor = 0;
  int sm_count = 0;
  size_t global_memory_bytes = 0;
  size_t l2_bytes = 0;
  size_t shared_memory_per_block_optin = 0;
};

// All visible devices; empty when there is no GPU or no driver (never throws for that).
std::vector<device_info> list_devices();
// The kernels are built for sm_90a: only compute capability 9.0 (H100/H200) runs them.
bool is_supported(const device_info& info);

}  // namespace dsv4::cuda
