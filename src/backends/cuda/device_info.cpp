// Device discovery for the CUDA backend (host code only: a .cpp, since nvcc 13 rejects fmt 9's
// compile-time format checks that core/error.h pulls in): reports what the engine needs to plan (SM
// count, memory, compute capability) and refuses devices older than Hopper, which the kernels
// target.
#include "backends/cuda/device_info.h"

#include <cuda_runtime.h>

#include <array>
#include <mutex>
#include <optional>

#include "core/error.h"

namespace dsv4::cuda {

namespace {

int attribute_or_zero(cudaDeviceAttr attr, int index) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attr, index) != cudaSuccess) {
    (void)cudaGetLastError();  // an attribute the driver lacks reads as unknown, not an error
    return 0;
  }
  return value;
}

}  // namespace

device_info query_device(int index) {
  cudaDeviceProp prop{};
  const cudaError_t status = cudaGetDeviceProperties(&prop, index);
  DSV4_CHECK(status == cudaSuccess, "cudaGetDeviceProperties({}): {}", index,
             cudaGetErrorString(status));
  device_info info;
  info.index = index;
  info.name = prop.name;
  info.major = prop.major;
  info.minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.global_memory_bytes = prop.totalGlobalMem;
  info.l2_bytes = prop.l2CacheSize;
  info.shared_memory_per_block_optin = prop.sharedMemPerBlockOptin;
  // CUDA 13 dropped the clock fields from cudaDeviceProp; the attributes remain.
  info.sm_clock_khz = attribute_or_zero(cudaDevAttrClockRate, index);
  info.memory_clock_khz = attribute_or_zero(cudaDevAttrMemoryClockRate, index);
  info.memory_bus_bits = attribute_or_zero(cudaDevAttrGlobalMemoryBusWidth, index);
  return info;
}

std::vector<device_info> list_devices() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver) return {};
  DSV4_CHECK(status == cudaSuccess, "cudaGetDeviceCount: {}", cudaGetErrorString(status));
  std::vector<device_info> devices;
  for (int i = 0; i < count; ++i) devices.push_back(query_device(i));
  return devices;
}

double peak_memory_gbps(const device_info& info) {
  if (info.memory_clock_khz <= 0 || info.memory_bus_bits <= 0) return 0.0;
  return 2.0 * double(info.memory_clock_khz) * 1e3 * double(info.memory_bus_bits) / 8.0 * 1e-9;
}

double peak_read_bytes_per_sm_cycle(const device_info& info) {
  const double gbps = peak_memory_gbps(info);
  if (gbps <= 0 || info.sm_count <= 0 || info.sm_clock_khz <= 0) return 0.0;
  return gbps * 1e9 / (double(info.sm_count) * double(info.sm_clock_khz) * 1e3);
}

device_info current_device_rates() {
  constexpr int k_cached = 64;
  static std::mutex mutex;
  static std::array<std::optional<device_info>, k_cached> cache;
  device_info info;
  if (cudaGetDevice(&info.index) != cudaSuccess) {
    (void)cudaGetLastError();
    return device_info{};
  }
  const bool cacheable = info.index >= 0 && info.index < k_cached;
  if (cacheable) {
    const std::lock_guard<std::mutex> lock(mutex);
    if (cache[size_t(info.index)]) return *cache[size_t(info.index)];
  }
  info.sm_count = attribute_or_zero(cudaDevAttrMultiProcessorCount, info.index);
  info.sm_clock_khz = attribute_or_zero(cudaDevAttrClockRate, info.index);
  info.memory_clock_khz = attribute_or_zero(cudaDevAttrMemoryClockRate, info.index);
  info.memory_bus_bits = attribute_or_zero(cudaDevAttrGlobalMemoryBusWidth, info.index);
  if (cacheable) {
    const std::lock_guard<std::mutex> lock(mutex);
    cache[size_t(info.index)] = info;
  }
  return info;
}

double current_device_read_bytes_per_sm_cycle() {
  return peak_read_bytes_per_sm_cycle(current_device_rates());
}

bool is_supported(const device_info& info) {
  return info.major == 9 && info.minor == 0;
}

}  // namespace dsv4::cuda
