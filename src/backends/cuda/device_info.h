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
// memory's rate. H200 18.4 (read, session 37), H100 SXM ~12.8 (from its published attributes):
// kernels that are issue- or latency-bound on the SM side fall further behind the read ceiling as
// it grows, so routing rules fitted on one device class use it to tell the classes apart. 0 when
// unknown.
double peak_read_bytes_per_sm_cycle(const device_info& info);
// The device classes of the routing and tuning rules: at or above this many bytes per SM cycle a
// device counts as the H200's class, below (and unknown, 0) as the H100's, where most rules were
// first fitted.
constexpr double k_rich_read_bytes_per_sm_cycle = 15.0;
inline bool bandwidth_rich(double read_bytes_per_sm_cycle) {
  return read_bytes_per_sm_cycle >= k_rich_read_bytes_per_sm_cycle;
}
// The calling thread's current device's index, SM count, SM and memory clocks and bus width (the
// fields peak_memory_gbps and peak_read_bytes_per_sm_cycle read; the others left empty), from
// five attributes, cached per device: cheap enough for host launch code, and no stream work, so
// safe inside a graph capture. Unknown fields (an attribute the driver lacks, no device) read 0.
device_info current_device_rates();
// peak_read_bytes_per_sm_cycle(current_device_rates()).
double current_device_read_bytes_per_sm_cycle();
// The kernels are built for sm_90a: only compute capability 9.0 (H100/H200) runs them.
bool is_supported(const device_info& info);

}  // namespace dsv4::cuda
