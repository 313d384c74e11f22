// Device discovery for the CUDA backend (host code only: a .cpp, since nvcc 13 rejects fmt 9's
// compile-time format checks that core/error.h pulls in): reports what the engine needs to plan (SM
// count, memory, compute capability) and refuses devices older than Hopper, which the kernels
// target.
#include "backends/cuda/device_info.h"

#include <cuda_runtime.h>

#include <atomic>
#include <mutex>

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

// The clocks and bus width (CUDA 13 dropped them from cudaDeviceProp; the attributes remain).
void read_clock_attributes(device_info& info) {
  info.sm_clock_khz = attribute_or_zero(cudaDevAttrClockRate, info.index);
  info.memory_clock_khz = attribute_or_zero(cudaDevAttrMemoryClockRate, info.index);
  info.memory_bus_bits = attribute_or_zero(cudaDevAttrGlobalMemoryBusWidth, info.index);
}

device_info read_rates(int index) {
  device_info info;
  info.index = index;
  info.sm_count = attribute_or_zero(cudaDevAttrMultiProcessorCount, index);
  read_clock_attributes(info);
  return info;
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
  read_clock_attributes(info);
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
  // Each device's entry is written once under the mutex, then read without it (ready's
  // release / acquire): launch code calls this per launch.
  constexpr int k_cached = 64;
  static std::mutex mutex;
  static device_info cache[k_cached];
  static std::atomic<bool> ready[k_cached];
  int index = 0;
  if (cudaGetDevice(&index) != cudaSuccess) {
    (void)cudaGetLastError();
    return device_info{};
  }
  if (index < 0 || index >= k_cached) return read_rates(index);
  if (!ready[index].load(std::memory_order_acquire)) {
    const std::lock_guard<std::mutex> lock(mutex);
    if (!ready[index].load(std::memory_order_relaxed)) {
      cache[index] = read_rates(index);
      ready[index].store(true, std::memory_order_release);
    }
  }
  return cache[index];
}

double current_device_read_bytes_per_sm_cycle() {
  return peak_read_bytes_per_sm_cycle(current_device_rates());
}

bool is_supported(const device_info& info) {
  return info.major == 9 && info.minor == 0;
}

}  // namespace dsv4::cuda
