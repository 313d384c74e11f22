// Device discovery for the CUDA backend (host code only: a .cpp, since nvcc 13 rejects fmt 9's
// compile-time format checks that core/error.h pulls in): reports what the engine needs to plan (SM
// count, memory, compute capability) and refuses devices older than Hopper, which the kernels
// target.
#include "backends/cuda/device_info.h"

#include <cuda_runtime.h>

#include "core/error.h"

namespace dsv4::cuda {

std::vector<device_info> list_devices() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver) return {};
  DSV4_CHECK(status == cudaSuccess, "cudaGetDeviceCount: {}", cudaGetErrorString(status));
  std::vector<device_info> devices;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    status = cudaGetDeviceProperties(&prop, i);
    DSV4_CHECK(status == cudaSuccess, "cudaGetDeviceProperties({}): {}", i,
               cudaGetErrorString(status));
    device_info info;
    info.index = i;
    info.name = prop.name;
    info.major = prop.major;
    info.minor = prop.minor;
    info.sm_count = prop.multiProcessorCount;
    info.global_memory_bytes = prop.totalGlobalMem;
    info.l2_bytes = prop.l2CacheSize;
    info.shared_memory_per_block_optin = prop.sharedMemPerBlockOptin;
    devices.push_back(info);
  }
  return devices;
}

bool is_supported(const device_info& info) {
  return info.major == 9 && info.minor == 0;
}

}  // namespace dsv4::cuda
