#include "backends/cuda/kernel_attributes.h"

#include <map>
#include <mutex>
#include <utility>

namespace dsv4::cuda {

namespace {

struct attribute_registry {
  std::mutex mutex;
  std::map<std::pair<const void*, int>, bool> configured;  // configure_kernel_once
  std::map<std::pair<const void*, int>, size_t> smem;      // allow_dynamic_smem: bytes allowed
};

attribute_registry& registry() {
  static attribute_registry r;
  return r;
}

}  // namespace

cudaError_t configure_kernel_once(const void* kernel, const std::function<cudaError_t()>& set) {
  int device = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  attribute_registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  const auto key = std::make_pair(kernel, device);
  if (r.configured.count(key)) return cudaSuccess;
  const cudaError_t e = set();
  if (e == cudaSuccess) r.configured[key] = true;
  return e;
}

cudaError_t allow_dynamic_smem(const void* kernel, size_t bytes) {
  int device = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  attribute_registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  size_t& allowed = r.smem[std::make_pair(kernel, device)];
  if (bytes <= allowed) return cudaSuccess;
  const cudaError_t e =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
  if (e == cudaSuccess) allowed = bytes;
  return e;
}

}  // namespace dsv4::cuda
