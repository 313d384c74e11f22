// cuda_ops: memory, transfers and the dense op families. The weight formats (linear.cpp side)
// and the attention families are in cuda_ops_linear.cpp and cuda_ops_attention.cpp.
#include "backends/cuda/cuda_ops.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backends/cuda/act_dispatch.h"
#include "backends/cuda/device_info.h"
#include "backends/cuda/elementwise.h"
#include "backends/cuda/linear_gemm.h"
#include "backends/cuda/mhc.h"
#include "backends/cuda/norm.h"
#include "backends/cuda/rope.h"
#include "core/error.h"

namespace dsv4::cuda {

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) fail("cuda: {}: {}", what, cudaGetErrorString(status));
}

namespace {

void check_device(const tensor& t, const char* what) {
  DSV4_CHECK(t.defined() && t.view().device == device_kind::cuda,
             "cuda op: {} must be a device tensor", what);
}

void check_f32(const tensor& t, const char* what) {
  check_device_type(t, dtype::f32, what);
}

// The mHC collapse's split-path partial sums (mhc.h), where that path may run; empty otherwise
// (the collapse then takes the cluster or block kernel).
tensor hc_workspace(cuda_ops& ops, int64_t T, int64_t hc, int64_t D, bool head) {
  if (T > hc_collapse_split_auto_tokens(head)) return tensor();
  const size_t bytes = hc_collapse_workspace_bytes(T, hc, D);
  return bytes ? ops.alloc(dtype::u8, {int64_t(bytes)}) : tensor();
}

// DSV4_SIDE_BRANCHES (read when a backend is made): how many branches may be open at once (1 ..
// cap; default cap). 1: one branch beside the main ops, as before several were allowed.
int side_branches_from_env(int cap) {
  const char* env = std::getenv("DSV4_SIDE_BRANCHES");
  const int v = env ? std::atoi(env) : cap;
  return v < 1 ? 1 : v > cap ? cap : v;
}

}  // namespace

void check_device_type(const tensor& t, dtype type, const char* what) {
  check_device(t, what);
  DSV4_CHECK(t.type() == type, "cuda op: {} must be {}, is {}", what, dtype_name(type),
             dtype_name(t.type()));
}

cuda_ops::cuda_ops(int device, dtype activations) : device_(device), act_(activations) {
  DSV4_CHECK(activations == dtype::f32 || activations == dtype::bf16,
             "cuda: activations must be f32 or bf16, not {}", dtype_name(activations));
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  check_cuda(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device),
             "cudaDeviceGetAttribute(multiprocessor count)");
  read_bytes_per_sm_cycle_ = current_device_read_bytes_per_sm_cycle();  // device is current
  check_cuda(cudaStreamCreateWithFlags(&main_stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  check_cuda(cudaEventCreateWithFlags(&fork_event_, cudaEventDisableTiming), "cudaEventCreate");
  for (int i = 0; i < k_side_branches; ++i) {
    check_cuda(cudaStreamCreateWithFlags(&side_streams_[i], cudaStreamNonBlocking),
               "cudaStreamCreate");
    check_cuda(cudaEventCreateWithFlags(&join_events_[i], cudaEventDisableTiming),
               "cudaEventCreate");
  }
  check_cuda(cudaStreamCreateWithFlags(&gates_stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  check_cuda(cudaEventCreateWithFlags(&gates_fork_event_, cudaEventDisableTiming),
             "cudaEventCreate");
  check_cuda(cudaEventCreateWithFlags(&gates_done_event_, cudaEventDisableTiming),
             "cudaEventCreate");
  stream_ = main_stream_;
  side_branches_ = side_branches_from_env(k_side_branches);
  gates_apart_ = [] {
    const char* env = std::getenv("DSV4_HC_GATES_APART");
    return env ? std::atoi(env) : 2;
  }();
  check_cuda(cudaEventCreateWithFlags(&staging_done_, cudaEventDisableTiming), "cudaEventCreate");
  allocator_ = std::make_unique<device_allocator>(device);
  // linear_gemm gives cuBLAS a workspace of the stream's own (cublas_workspace, linear_gemm.h):
  // GEMMs stay out of cudaMalloc, capturable, and independent of each other's streams.
  DSV4_CHECK(cublasCreate(&cublas_) == CUBLAS_STATUS_SUCCESS, "cuda: cublasCreate failed");
  DSV4_CHECK(cublasSetStream(cublas_, stream_) == CUBLAS_STATUS_SUCCESS,
             "cuda: cublas stream setup failed");
}

cuda_ops::~cuda_ops() {
  if (gates_stream_) cudaStreamSynchronize(gates_stream_);
  for (cudaStream_t side : side_streams_)
    if (side) cudaStreamSynchronize(side);
  if (main_stream_) cudaStreamSynchronize(main_stream_);
  if (cublas_) cublasDestroy(cublas_);
  for (cudaStream_t side : side_streams_)
    if (side) cudaStreamDestroy(side);
  if (main_stream_) cudaStreamDestroy(main_stream_);
  if (fork_event_) cudaEventDestroy(fork_event_);
  if (gates_stream_) cudaStreamDestroy(gates_stream_);
  if (gates_fork_event_) cudaEventDestroy(gates_fork_event_);
  if (gates_done_event_) cudaEventDestroy(gates_done_event_);
  for (cudaEvent_t join : join_events_)
    if (join) cudaEventDestroy(join);
  if (staging_) cudaFreeHost(staging_);
  if (staging_done_) cudaEventDestroy(staging_done_);
}

namespace {

// DSV4_SIDE_BRANCH: the side branch's uses (ops::side_branch_use bits; default all).
int side_branch_uses() {
  static const int uses = [] {
    const char* env = std::getenv("DSV4_SIDE_BRANCH");
    return env ? std::atoi(env) : 7;
  }();
  return uses;
}

}  // namespace

bool cuda_ops::side_branch_takes(side_branch_use use) const {
  return (side_branch_uses() & int(use)) != 0;
}

int cuda_ops::side_branches() const {
  return side_branches_;
}

bool cuda_ops::begin_side_branch(int64_t tokens, side_branch_use use) {
  // A branch left issuing (an error thrown between begin and end) is ended first; with every
  // branch slot taken, the open branches are joined first.
  if (side_issuing_) end_side_branch();
  if (side_open_ >= side_branches()) join_side_branch();
  if (!side_branch_takes(use) || tokens > 8) return false;
  // Forked from the main stream's current point: the branch orders after everything issued on
  // it so far (not after the other open branch's work, which it must not read).
  cudaStream_t side = side_streams_[side_open_];
  check_cuda(cudaEventRecord(fork_event_, main_stream_), "side branch fork (record)");
  check_cuda(cudaStreamWaitEvent(side, fork_event_, 0), "side branch fork (wait)");
  allocator_->defer_frees();  // once per open branch; the join releases as many
  stream_ = side;
  ++side_open_;
  side_issuing_ = true;
  return true;
}

void cuda_ops::end_side_branch() {
  DSV4_CHECK(side_issuing_, "cuda: end_side_branch without begin_side_branch");
  stream_ = main_stream_;
  side_issuing_ = false;
}

void cuda_ops::join_side_branch() {
  DSV4_CHECK(!side_issuing_ && side_open_ > 0, "cuda: join_side_branch before end_side_branch");
  for (int i = 0; i < side_open_; ++i) {
    check_cuda(cudaEventRecord(join_events_[i], side_streams_[i]), "side branch join (record)");
    check_cuda(cudaStreamWaitEvent(main_stream_, join_events_[i], 0), "side branch join (wait)");
    allocator_->release_deferred_frees();
  }
  side_open_ = 0;
  if (gates_apart_ == 2) join_gates();
}

void cuda_ops::join_gates() {
  if (!gates_pending_) return;
  gates_pending_ = false;
  check_cuda(cudaEventRecord(gates_done_event_, gates_stream_), "hc gates join (record)");
  check_cuda(cudaStreamWaitEvent(main_stream_, gates_done_event_, 0), "hc gates join (wait)");
  gates_ws_ = tensor();  // the main stream is now ordered after the gates kernel's reads
}

void* cuda_ops::cublas_workspace() {
  int slot = 0;
  for (int i = 0; i < k_side_branches; ++i)
    if (stream_ == side_streams_[i]) slot = 1 + i;
  DSV4_CHECK(slot > 0 || stream_ == main_stream_, "cuda: cublas_workspace on an unknown stream");
  std::shared_ptr<void>& ws = cublas_workspaces_[slot];
  // Inside a capture this comes from the graph's private pool; the block then stays live (held
  // here) after the graph goes, as the allocator allows.
  if (!ws) ws = allocator_->allocate(k_linear_gemm_cublas_workspace_bytes);
  return ws.get();
}

size_t cuda_ops::allocated_bytes() const {
  return allocator_->allocated_bytes();
}

size_t cuda_ops::reserved_bytes() const {
  return allocator_->reserved_bytes();
}

tensor cuda_ops::alloc(dtype type, const dims& shape) {
  tensor_view v;
  v.type = type;
  v.shape = shape;
  v.strides = contiguous_strides(shape);
  v.device = device_kind::cuda;
  std::shared_ptr<void> storage = allocator_->allocate(dtype_bytes(type, shape.numel()));
  v.data = storage.get();
  return tensor::wrap(std::move(storage), v);
}

tensor cuda_ops::zeros(dtype type, const dims& shape) {
  tensor t = alloc(type, shape);
  check_cuda(cudaMemsetAsync(t.data<void>(), 0, t.bytes(), stream_), "cudaMemsetAsync");
  return t;
}

tensor cuda_ops::upload(const tensor_view& host) {
  DSV4_CHECK(host.device == device_kind::cpu && host.is_contiguous(),
             "cuda upload needs a contiguous host view");
  tensor t = alloc(host.type, host.shape);
  // Synchronous: the host buffer may be temporary, and the block may still be in use by queued
  // work (cached allocator). Uploads happen at load; a step's plan goes through upload_to.
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  check_cuda(cudaMemcpy(t.data<void>(), host.data, host.bytes(), cudaMemcpyHostToDevice),
             "cudaMemcpy H2D");
  return t;
}

void cuda_ops::upload_to(tensor& device, const tensor_view& host) {
  DSV4_CHECK(host.device == device_kind::cpu && host.is_contiguous(),
             "cuda upload_to needs a contiguous host view");
  DSV4_CHECK(device.defined() && device.view().device == device_kind::cuda &&
                 device.type() == host.type && device.numel() == host.numel() &&
                 device.view().is_contiguous(),
             "cuda upload_to: host {} {} into device {}", dtype_name(host.type), host.shape.str(),
             device.defined() ? device.shape().str() : std::string("(undefined)"));
  const size_t bytes = host.bytes();
  // The previous copy out of the staging buffer must be done before it is overwritten (a no-op
  // wait in a decode loop: the previous step's logits download already waited for it).
  check_cuda(cudaEventSynchronize(staging_done_), "cudaEventSynchronize");
  if (bytes > staging_bytes_) {
    if (staging_) check_cuda(cudaFreeHost(staging_), "cudaFreeHost");
    staging_ = nullptr;
    staging_bytes_ = 0;
    const size_t want = std::max<size_t>(bytes, size_t(64) << 10);
    check_cuda(cudaMallocHost(&staging_, want), "cudaMallocHost");
    staging_bytes_ = want;
  }
  std::memcpy(staging_, host.data, bytes);
  check_cuda(cudaMemcpyAsync(device.data<void>(), staging_, bytes, cudaMemcpyHostToDevice, stream_),
             "cudaMemcpyAsync H2D");
  check_cuda(cudaEventRecord(staging_done_, stream_), "cudaEventRecord");
}

tensor cuda_ops::upload_f32(const tensor_view& host) {
  if (host.type == dtype::f32) return upload(host);
  return upload(tensor::to_f32(host).view());
}

tensor cuda_ops::download(const tensor& device) {
  check_device(device, "download source");
  join_gates();
  tensor h = tensor::empty(device.type(), device.shape());
  check_cuda(cudaMemcpyAsync(h.data<void>(), device.data<void>(), device.bytes(),
                             cudaMemcpyDeviceToHost, stream_),
             "cudaMemcpyAsync D2H");
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  return h;
}

tensor cuda_ops::embed(const tensor& table, const tensor& ids) {
  check_f32(table, "embedding table");
  check_device(ids, "ids");
  const int64_t T = ids.numel();
  tensor y = alloc(act_, {T, table.size(1)});
  check_cuda(with_act(act_,
                      [&](auto* a) {
                        return cuda::embed(table.data<float>(), table.size(0), table.size(1),
                                           ids.data<int32_t>(), T, act_ptr(y, a), stream_);
                      }),
             "embed");
  return y;
}

tensor cuda_ops::rms_norm(const tensor& x, const tensor* weight, float eps, int64_t groups) {
  check_device_type(x, act_, "rms_norm input");
  const int64_t n = x.size(-1);
  DSV4_CHECK(groups > 0 && n % groups == 0, "rms_norm: {} features in {} groups", n, groups);
  if (weight) {
    check_f32(*weight, "rms_norm weight");
    DSV4_CHECK(weight->numel() == n / groups, "rms_norm: weight of {} for groups of {}",
               weight->numel(), n / groups);
  }
  tensor y = alloc(act_, x.shape());
  check_cuda(with_act(act_,
                      [&](auto* a) {
                        return cuda::rms_norm(
                            act_ptr(x, a), weight ? weight->data<float>() : nullptr, act_ptr(y, a),
                            x.numel() / n, n, groups, eps, stream_);
                      }),
             "rms_norm");
  return y;
}

void cuda_ops::rope(tensor& x, int64_t heads, int64_t head_dim, int64_t rope_dim,
                    const tensor& positions, const tensor& inv_freq, bool inverse) {
  check_device_type(x, act_, "rope input");
  const int64_t T = x.size(0);
  DSV4_CHECK(x.numel() == T * heads * head_dim && positions.numel() == T &&
                 inv_freq.numel() == rope_dim / 2,
             "rope: input {} for {} heads of {}, rope {}", x.shape().str(), heads, head_dim,
             rope_dim);
  check_cuda(with_act(act_,
                      [&](auto* a) {
                        return cuda::rope(act_ptr(x, a), T, heads, head_dim, rope_dim,
                                          positions.data<int32_t>(), inv_freq.data<float>(),
                                          inverse, stream_);
                      }),
             "rope");
}

void cuda_ops::add(tensor& x, const tensor& y) {
  check_device_type(x, act_, "add lhs");
  check_device_type(y, act_, "add rhs");
  DSV4_CHECK(x.numel() == y.numel(), "add: {} vs {}", x.shape().str(), y.shape().str());
  check_cuda(with_act(act_,
                      [&](auto* a) {
                        return cuda::add(act_ptr(x, a), act_ptr(y, a), x.numel(), stream_);
                      }),
             "add");
}

void cuda_ops::scale(tensor& x, float s) {
  check_device_type(x, act_, "scale input");
  check_cuda(
      with_act(act_, [&](auto* a) { return cuda::scale(act_ptr(x, a), s, x.numel(), stream_); }),
      "scale");
}

tensor cuda_ops::swiglu(const tensor& gate, const tensor& up, float limit) {
  check_device_type(gate, act_, "swiglu gate");
  check_device_type(up, act_, "swiglu up");
  DSV4_CHECK(gate.shape() == up.shape(), "swiglu: {} vs {}", gate.shape().str(), up.shape().str());
  tensor y = alloc(act_, gate.shape());
  check_cuda(with_act(act_,
                      [&](auto* a) {
                        return cuda::swiglu(act_ptr(gate, a), act_ptr(up, a), act_ptr(y, a),
                                            gate.numel(), limit, stream_);
                      }),
             "swiglu");
  return y;
}

tensor cuda_ops::hc_pre(const tensor& x, const tensor& fn, const tensor& base, const tensor& scale,
                        int64_t sinkhorn_iters, float hc_eps, float norm_eps, tensor& post,
                        tensor& comb) {
  check_device_type(x, act_, "hc_pre input");
  join_gates();  // post and comb are rewritten
  check_f32(post, "hc_pre post");
  check_f32(comb, "hc_pre comb");
  const int64_t T = x.size(0), hc = x.size(1), D = x.size(2);
  DSV4_CHECK(fn.size(0) == (2 + hc) * hc && fn.size(1) == hc * D,
             "hc_pre: fn {} for {} streams of {}", fn.shape().str(), hc, D);
  tensor y = alloc(act_, {T, D});
  tensor ws = hc_workspace(*this, T, hc, D, false);
  check_cuda(with_act(act_,
                      [&](auto* a) {
                        return cuda::hc_pre(act_ptr(x, a), fn.data<float>(), base.data<float>(),
                                            scale.data<float>(), T, hc, D, sinkhorn_iters, hc_eps,
                                            norm_eps, act_ptr(y, a), post.data<float>(),
                                            comb.data<float>(), stream_,
                                            cuda::hc_collapse_path::automatic,
                                            ws.defined() ? ws.data<uint8_t>() : nullptr,
                                            ws.defined() ? size_t(ws.bytes()) : 0);
                      }),
             "hc_pre");
  return y;
}

tensor cuda_ops::hc_post(const tensor& x, const tensor& f, const tensor& post, const tensor& comb) {
  check_device_type(x, act_, "hc_post residual");
  check_device_type(f, act_, "hc_post sublayer output");
  join_gates();  // post and comb are read
  check_f32(post, "hc_post post");
  check_f32(comb, "hc_post comb");
  const int64_t T = x.size(0), hc = x.size(1), D = x.size(2);
  DSV4_CHECK(f.numel() == T * D, "hc_post: output {} for residual {}", f.shape().str(),
             x.shape().str());
  tensor y = alloc(act_, x.shape());
  check_cuda(with_act(act_,
                      [&](auto* a) {
                        return cuda::hc_post(act_ptr(x, a), act_ptr(f, a), post.data<float>(),
                                             comb.data<float>(), T, hc, D, act_ptr(y, a), stream_);
                      }),
             "hc_post");
  return y;
}

// Fused at decode sizes (where hc_pre takes the split path: hc_workspace), composed above.
// DSV4_HC_FUSE=0 composes it everywhere (A/B in one binary).
tensor cuda_ops::hc_post_pre_norm(const tensor& x, const tensor* f, const tensor& fn,
                                  const tensor& base, const tensor& scale, int64_t sinkhorn_iters,
                                  float hc_eps, float norm_eps, const tensor& norm_weight,
                                  tensor& post, tensor& comb, tensor& x_next,
                                  const tensor* fp8_copy_rows, tensor* fp8_copy) {
  check_device_type(x, act_, "hc_post_pre_norm residual");
  join_gates();  // post and comb are read, then rewritten
  const int64_t T = x.size(0), hc = x.size(1), D = x.size(2);
  static const bool fuse = [] {
    const char* env = std::getenv("DSV4_HC_FUSE");
    return !env || std::atoi(env) != 0;
  }();
  tensor ws = fuse ? hc_workspace(*this, T, hc, D, false) : tensor();
  if (!ws.defined() || !hc_post_pre_norm_supported(T, hc, D))
    return ops::hc_post_pre_norm(x, f, fn, base, scale, sinkhorn_iters, hc_eps, norm_eps,
                                 norm_weight, post, comb, x_next, fp8_copy_rows, fp8_copy);
  DSV4_CHECK(!fp8_copy_rows == !fp8_copy,
             "hc_post_pre_norm: an FP8 copy needs its rows and its output");
  if (f) {
    check_device_type(*f, act_, "hc_post_pre_norm sublayer output");
    DSV4_CHECK(f->numel() == T * D, "hc_post_pre_norm: output {} for residual {}", f->shape().str(),
               x.shape().str());
  }
  check_f32(post, "hc_post_pre_norm post");
  check_f32(comb, "hc_post_pre_norm comb");
  check_f32(norm_weight, "hc_post_pre_norm norm weight");
  DSV4_CHECK(post.numel() == T * hc && comb.numel() == T * hc * hc,
             "hc_post_pre_norm: post {} / comb {} for {} tokens of {} streams", post.shape().str(),
             comb.shape().str(), T, hc);
  DSV4_CHECK(fn.size(0) == (2 + hc) * hc && fn.size(1) == hc * D,
             "hc_post_pre_norm: fn {} for {} streams of {}", fn.shape().str(), hc, D);
  DSV4_CHECK(norm_weight.numel() == D, "hc_post_pre_norm: norm weight of {} for width {}",
             norm_weight.numel(), D);
  tensor next = f ? alloc(act_, x.shape()) : x;
  tensor y = alloc(act_, {T, D});
  // The FP8 copy in the finish kernel where it allows (fp8_copy_rows is the identity by contract),
  // otherwise made after it as the default does.
  tensor q;
  bool q_fused = false;
  if (fp8_copy) {
    DSV4_CHECK(fp8_copy_rows->numel() == T, "hc_post_pre_norm: {} FP8 copy rows for {} tokens",
               fp8_copy_rows->numel(), T);
    q = alloc(act_, {T, D});
    q_fused = with_act(act_, [&](auto* a) {
      return cuda::hc_post_pre_norm_fp8_copy_supported(
          D, act_ptr(x, a), f ? act_ptr(next, a) : nullptr, act_ptr(y, a), act_ptr(q, a));
    });
  }
  // The gates apart (on the main stream only: not inside a side branch): the next sub-layer reads
  // y alone, and the Sinkhorn projection (the longest CTA of the finish launch) runs beside it.
  const bool gates_apart = gates_apart_ != 0 && stream_ == main_stream_;
  check_cuda(with_act(act_,
                      [&](auto* a) {
                        return cuda::hc_post_pre_norm(
                            act_ptr(x, a), f ? act_ptr(*f, a) : nullptr, fn.data<float>(),
                            base.data<float>(), scale.data<float>(), norm_weight.data<float>(), T,
                            hc, D, sinkhorn_iters, hc_eps, norm_eps, f ? act_ptr(next, a) : nullptr,
                            act_ptr(y, a), q_fused ? act_ptr(q, a) : nullptr, post.data<float>(),
                            comb.data<float>(), stream_, ws.data<uint8_t>(), size_t(ws.bytes()),
                            !gates_apart);
                      }),
             "hc_post_pre_norm");
  if (gates_apart) {
    check_cuda(cudaEventRecord(gates_fork_event_, main_stream_), "hc gates fork (record)");
    check_cuda(cudaStreamWaitEvent(gates_stream_, gates_fork_event_, 0), "hc gates fork (wait)");
    gates_pending_ = true;  // joined even if the launch below fails
    gates_ws_ = ws;
    check_cuda(cuda::hc_post_pre_norm_gates(ws.data<uint8_t>(), size_t(ws.bytes()),
                                            base.data<float>(), scale.data<float>(), T, hc, D,
                                            sinkhorn_iters, hc_eps, norm_eps, post.data<float>(),
                                            comb.data<float>(), gates_stream_),
               "hc_post_pre_norm gates");
  }
  if (fp8_copy) {
    if (!q_fused) {
      q = gather_rows(y, *fp8_copy_rows);
      fake_quant_fp8_act(q, 128);
    }
    *fp8_copy = q;
  }
  x_next = next;
  return y;
}

tensor cuda_ops::hc_head(const tensor& x, const tensor& fn, const tensor& base, const tensor& scale,
                         float hc_eps, float norm_eps) {
  check_device_type(x, act_, "hc_head input");
  const int64_t T = x.size(0), hc = x.size(1), D = x.size(2);
  DSV4_CHECK(fn.size(0) == hc && fn.size(1) == hc * D, "hc_head: fn {} for {} streams of {}",
             fn.shape().str(), hc, D);
  tensor y = alloc(act_, {T, D});
  tensor ws = hc_workspace(*this, T, hc, D, true);
  check_cuda(with_act(act_,
                      [&](auto* a) {
                        return cuda::hc_head(act_ptr(x, a), fn.data<float>(), base.data<float>(),
                                             scale.data<float>(), T, hc, D, hc_eps, norm_eps,
                                             act_ptr(y, a), stream_,
                                             cuda::hc_collapse_path::automatic,
                                             ws.defined() ? ws.data<uint8_t>() : nullptr,
                                             ws.defined() ? size_t(ws.bytes()) : 0);
                      }),
             "hc_head");
  return y;
}

}  // namespace dsv4::cuda
