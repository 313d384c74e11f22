// Device discovery for the CUDA backend (host code only: a .cpp, since nvcc 13 rejects fmt 9's
// compile-time format checks that core/error.h pulls in): reports what the engine needs to plan (SM
// count, memory, compute capability) and refuses devices older than Hopper, which the kernels
// target.
#include "backends/cuda/device_info.h"

#include <cuda_runtime.h>

#include <atomic>

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

double current_device_read_bytes_per_sm_cycle() {
  // value + 1 per device (zero-initialized: 0 = not yet read; an unknown device stores 1).
  constexpr int k_cached = 64;
  static std::atomic<double> cache[k_cached];
  int index = 0;
  if (cudaGetDevice(&index) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0.0;
  }
  const bool cacheable = index >= 0 && index < k_cached;
  if (cacheable) {
    const double cached = cache[index].load(std::memory_order_relaxed);
    if (cached > 0) return cached - 1.0;
  }
  device_info info;
  info.sm_count = attribute_or_zero(cudaDevAttrMultiProcessorCount, index);
  info.sm_clock_khz = attribute_or_zero(cudaDevAttrClockRate, index);
  info.memory_clock_khz = attribute_or_zero(cudaDevAttrMemoryClockRate, index);
  info.memory_bus_bits = attribute_or_zero(cudaDevAttrGlobalMemoryBusWidth, index);
  const double value = peak_read_bytes_per_sm_cycle(info);
  if (cacheable) cache[index].store(value + 1.0, std::memory_order_relaxed);
  return value;
}

bool is_supported(const device_info& info) {
  return info.major == 9 && info.minor == 0;
}

}  // namespace dsv4::cuda
