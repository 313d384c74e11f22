// CUDA-graph capture of the backend's stream (ops::capture): the body runs once eagerly and once
// under stream capture, both with a private allocator pool, which the graph keeps alive.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <memory>

#include "backends/cuda/device_allocator.h"
#include "model/ops.h"

namespace dsv4::cuda {

class cuda_graph final : public captured_graph {
 public:
  // Captures body's work on `stream` (relaxed mode: a cudaMalloc on an allocator miss would not
  // break the capture, though the eager run makes it a hit).
  static std::unique_ptr<cuda_graph> capture(cudaStream_t stream, device_allocator& allocator,
                                             const std::function<void()>& body);
  ~cuda_graph() override;
  void replay() override;
  size_t node_count() const override { return nodes_; }

 private:
  cuda_graph() = default;
  cudaStream_t stream_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  size_t nodes_ = 0;
  // The blocks the graph's kernels address: no one else gets them while the graph lives.
  std::shared_ptr<device_allocator::pool> pool_;
};

}  // namespace dsv4::cuda
