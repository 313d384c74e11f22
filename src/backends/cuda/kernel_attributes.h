// Kernel attributes set with cudaFuncSetAttribute (dynamic shared memory above the 48 KB default,
// non-portable cluster sizes, carveouts) belong to the device that is current when they are set:
// a process driving two GPUs must set them on each. These helpers remember what was set per
// (kernel, device) pair instead of once per process (a `static bool` next to the launch would
// leave the second device's launches without them). Thread-safe; the lookup is one
// cudaGetDevice and a mutex-guarded map access, paid per launch.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>

namespace dsv4::cuda {

// Runs `set` (which sets the kernel's attributes on the current device) the first time `kernel`
// is configured on the current device; a failure is returned and not remembered.
cudaError_t configure_kernel_once(const void* kernel, const std::function<cudaError_t()>& set);

// cudaFuncAttributeMaxDynamicSharedMemorySize of `kernel` on the current device raised to at
// least `bytes` (never lowered: a smaller launch after a larger one needs no call).
cudaError_t allow_dynamic_smem(const void* kernel, size_t bytes);

template <typename... Params>
cudaError_t allow_dynamic_smem(void (*kernel)(Params...), size_t bytes) {
  return allow_dynamic_smem(reinterpret_cast<const void*>(kernel), bytes);
}

}  // namespace dsv4::cuda
