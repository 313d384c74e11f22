#include "backends/cuda/cuda_graph.h"

#include "backends/cuda/cuda_ops.h"
#include "core/error.h"

namespace dsv4::cuda {

std::unique_ptr<cuda_graph> cuda_graph::capture(cudaStream_t stream, device_allocator& allocator,
                                                const std::function<void()>& body) {
  std::unique_ptr<cuda_graph> g(new cuda_graph());
  g->stream_ = stream;
  g->pool_ = allocator.new_private_pool();
  device_allocator::pool_scope scope(allocator, g->pool_);
  // Warm-up: the real step, eagerly; it leaves in the pool every block the capture will ask for.
  body();
  check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed),
             "cudaStreamBeginCapture");
  try {
    body();
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(stream, &broken);
    if (broken) cudaGraphDestroy(broken);
    cudaGetLastError();
    throw;
  }
  check_cuda(cudaStreamEndCapture(stream, &g->graph_), "cudaStreamEndCapture");
  check_cuda(cudaGraphGetNodes(g->graph_, nullptr, &g->nodes_), "cudaGraphGetNodes");
  check_cuda(cudaGraphInstantiate(&g->exec_, g->graph_, 0), "cudaGraphInstantiate");
  return g;
}

cuda_graph::~cuda_graph() {
  // Replays still queued finish first (graphs are dropped between steps, never inside one); the
  // pool's blocks then return to the shared cache when the last tensor from it goes.
  if (stream_) cudaStreamSynchronize(stream_);
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
}

void cuda_graph::replay() {
  check_cuda(cudaGraphLaunch(exec_, stream_), "cudaGraphLaunch");
}

std::unique_ptr<captured_graph> cuda_ops::capture(const std::function<void()>& body) {
  join_gates();
  // Work forked onto the gates stream is joined before each run of body ends (a capture must
  // end with every forked stream joined), also when body throws.
  return cuda_graph::capture(stream_, *allocator_, [&] {
    try {
      body();
    } catch (...) {
      join_gates();
      throw;
    }
    join_gates();
  });
}

}  // namespace dsv4::cuda
