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
  int sm_clock_khz = 0;      // peak SM clock
  int memory_clock_khz = 0;  // peak memory clock (DDR: two transfers a clock)
  int memory_bus_bits = 0;
};

// All visible devices; empty when there is no GPU or no driver (never throws for that).
std::vector<device_info> list_devices();
// One device's properties (index as cudaSetDevice takes it); throws on a runtime error.
device_info query_device(int index);
// Peak HBM bandwidth from the memory clock and bus width, GB/s (0 when the driver does not say).
double peak_memory_gbps(const device_info& info);
// Peak HBM bytes per SM per SM clock: what each SM must consume for a kernel to stream at the
// memory's rate. H100 SXM ~12.8, H200 ~18.4 (the same SMs and clock, 1.44x the bandwidth): kernels
// that are issue- or latency-bound on the SM side fall further behind the read ceiling as it grows,
// so routing rules fitted on one device class use it to tell the classes apart. 0 when unknown.
double peak_read_bytes_per_sm_cycle(const device_info& info);
// The kernels are built for sm_90a: only compute capability 9.0 (H100/H200) runs them.
bool is_supported(const device_info& info);

}  // namespace dsv4::cuda
