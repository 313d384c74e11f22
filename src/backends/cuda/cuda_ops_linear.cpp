// cuda_ops: weights in their checkpoint formats on the device (linear.h; the routed experts'
// 4-bit bytes repacked at load where expert_layout.h says), linears and MoE.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/cuda/act_dispatch.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/dense_layout.h"
#include "backends/cuda/expert_layout.h"
#include "backends/cuda/linear.h"
#include "backends/cuda/linear_decode.h"
#include "backends/cuda/linear_decode_fp8act.h"
#include "backends/cuda/linear_decode_nvfp4.h"
#include "backends/cuda/linear_dispatch.h"
#include "backends/cuda/linear_fp8_cublaslt.h"
#include "backends/cuda/linear_fp8_dispatch.h"
#include "backends/cuda/linear_gemm.h"
#include "backends/cuda/linear_w8a8_wgmma.h"
#include "backends/cuda/moe.h"
#include "backends/cuda/moe_decode.h"
#include "backends/cuda/moe_prefill.h"
#include "backends/cuda/moe_repack.h"
#include "backends/cuda/weight_facts.h"
#include "core/error.h"

namespace dsv4::cuda {

namespace {

// A weight (or a stack of expert weights) on the device, with the buffers it points into.
struct device_weight_storage {
  device_weight w;
  tensor data, scale, global_scale;
};

class cuda_linear : public prepared_linear {
 public:
  device_weight_storage s;
  tensor lt_scale;  // FP8 blocks: the block scales as f32 in linear_fp8_cublaslt's layout
};

class cuda_experts : public prepared_experts {
 public:
  device_weight_storage w1, w3, w2;
};

struct format_plan {
  weight_kind kind = weight_kind::f32;
  bool scale_e8m0 = false;
  bool convert_to_f32 = false;  // dense F16: expanded once on the host
};

format_plan plan_format(const linear_weight& lw) {
  format_plan p;
  switch (lw.format) {
    case weight_format::dense:
      if (lw.weight.type == dtype::bf16)
        p.kind = weight_kind::bf16;
      else if (lw.weight.type == dtype::f32)
        p.kind = weight_kind::f32;
      else
        p.kind = weight_kind::f32, p.convert_to_f32 = true;
      break;
    case weight_format::fp8_block:
      p.kind = weight_kind::fp8_block;
      p.scale_e8m0 = lw.scale.type == dtype::f8_e8m0;
      break;
    case weight_format::mxfp4:
      p.kind = weight_kind::mxfp4;
      p.scale_e8m0 = lw.scale.type == dtype::f8_e8m0;
      break;
    case weight_format::nvfp4:
      p.kind = weight_kind::nvfp4;
      break;
  }
  return p;
}

// Host bytes of the weight data of `lw` in the device layout of `p`.
tensor weight_bytes(const linear_weight& lw, const format_plan& p) {
  DSV4_CHECK(lw.weight.is_contiguous(), "cuda: weight {} is not contiguous", lw.name);
  if (p.convert_to_f32) return tensor::to_f32(lw.weight);
  tensor t = tensor::empty(dtype::u8, {int64_t(weight_matrix_bytes(p.kind, lw.out, lw.in))});
  DSV4_CHECK(size_t(t.numel()) == lw.weight.bytes(), "cuda: weight {} holds {} bytes, expected {}",
             lw.name, lw.weight.bytes(), t.numel());
  std::memcpy(t.data<void>(), lw.weight.data, lw.weight.bytes());
  return t;
}

// Host scale array of `lw` in the device layout (f32, or raw E8M0 / E4M3 bytes).
tensor scale_values(const linear_weight& lw, const format_plan& p) {
  if (p.kind == weight_kind::f32 || p.kind == weight_kind::bf16) return {};
  const int64_t n = scale_matrix_count(p.kind, lw.out, lw.in);
  DSV4_CHECK(lw.scale.numel() == n, "cuda: scale of {} has {} values, expected {}", lw.name,
             lw.scale.numel(), n);
  if (p.kind == weight_kind::nvfp4 || p.scale_e8m0) {
    tensor t = tensor::empty(dtype::u8, {n});
    std::memcpy(t.data<void>(), lw.scale.data, size_t(n));
    return t;
  }
  return tensor::to_f32(lw.scale);
}

float global_scale_value(const linear_weight& lw) {
  if (lw.format != weight_format::nvfp4) return 1.0f;
  float v = 0;
  convert_to_f32(lw.scale_2.type, lw.scale_2.data, &v, 1);
  return v;
}

// Uploads `weights` (one or a stack of same-format matrices) into one device allocation each for
// data, scales and global scales. layout repacked (4-bit kinds, dims the repack tiles divide):
// each matrix's bytes go through a one-matrix device staging buffer and
// fp4_repack::repack_matrices_device into their place, all on the backend's stream (no second
// copy of the stack), which is synchronised once at the end (load time, not a step).
device_weight_storage upload_weights(cuda_ops& o, const std::vector<const linear_weight*>& weights,
                                     weight_layout layout = weight_layout::checkpoint) {
  const linear_weight& first = *weights[0];
  const format_plan p = plan_format(first);
  device_weight_storage s;
  const int64_t count = int64_t(weights.size());
  const int64_t wbytes = p.convert_to_f32 ? first.out * first.in * 4
                                          : weight_matrix_bytes(p.kind, first.out, first.in);
  const int64_t scount = (p.kind == weight_kind::f32 || p.kind == weight_kind::bf16)
                             ? 0
                             : scale_matrix_count(p.kind, first.out, first.in);
  const int64_t sbytes = scount * ((p.kind == weight_kind::nvfp4 || p.scale_e8m0) ? 1 : 4);
  s.data = o.alloc(dtype::u8, {wbytes * count});
  if (sbytes) s.scale = o.alloc(dtype::u8, {sbytes * count});
  const bool repack = layout == weight_layout::repacked;
  DSV4_CHECK(!repack || ((p.kind == weight_kind::mxfp4 || p.kind == weight_kind::nvfp4) &&
                         fp4_repack::repack_supported(first.out, first.in)),
             "cuda: {} [{}, {}] cannot be repacked", first.name, first.out, first.in);
  tensor staging;
  if (repack) staging = o.alloc(dtype::u8, {wbytes});
  std::vector<float> globals;
  // E8M0 scales all <= 128 over the stack (device_weight::scales_at_most_2).
  bool scales_at_most_2 = p.kind == weight_kind::mxfp4 && p.scale_e8m0;
  for (int64_t e = 0; e < count; ++e) {
    const linear_weight& lw = *weights[e];
    const format_plan pe = plan_format(lw);
    DSV4_CHECK(pe.kind == p.kind && pe.scale_e8m0 == p.scale_e8m0 && lw.out == first.out &&
                   lw.in == first.in,
               "cuda: {} differs in format or shape from {}", lw.name, first.name);
    const tensor w = weight_bytes(lw, p);
    uint8_t* dst = s.data.data<uint8_t>() + e * wbytes;
    if (repack) {
      // Stream-ordered: the next matrix's copy into the staging buffer waits for this repack.
      check_cuda(cudaMemcpyAsync(staging.data<uint8_t>(), w.data<void>(), size_t(wbytes),
                                 cudaMemcpyHostToDevice, o.stream()),
                 "cudaMemcpyAsync weight");
      check_cuda(fp4_repack::repack_matrices_device(staging.data<uint8_t>(), dst, 1, first.out,
                                                    first.in, o.stream()),
                 "repack_matrices_device");
      // w (pageable host memory) may go: cudaMemcpyAsync has staged it before returning.
    } else {
      check_cuda(cudaMemcpy(dst, w.data<void>(), size_t(wbytes), cudaMemcpyHostToDevice),
                 "cudaMemcpy weight");
    }
    if (sbytes) {
      const tensor sc = scale_values(lw, p);
      check_cuda(cudaMemcpy(s.scale.data<uint8_t>() + e * sbytes, sc.data<void>(), size_t(sbytes),
                            cudaMemcpyHostToDevice),
                 "cudaMemcpy scale");
      if (scales_at_most_2) scales_at_most_2 = e8m0_scales_at_most_2(sc.data<uint8_t>(), sbytes);
    }
    globals.push_back(global_scale_value(lw));
  }
  s.w.kind = p.kind;
  s.w.rows = first.out;
  s.w.cols = first.in;
  s.w.count = count;
  s.w.data = s.data.data<void>();
  s.w.scale = sbytes ? s.scale.data<void>() : nullptr;
  s.w.scale_e8m0 = p.scale_e8m0;
  s.w.scales_at_most_2 = scales_at_most_2;
  s.w.layout = layout;
  if (p.kind == weight_kind::nvfp4) {
    tensor g = tensor::empty(dtype::f32, {count});
    std::copy(globals.begin(), globals.end(), g.data<float>());
    s.global_scale = o.upload(g.view());
    s.w.global_scale = s.global_scale.data<float>();
  }
  if (repack) check_cuda(cudaStreamSynchronize(o.stream()), "repack at load");
  check_cuda(validate_weight(s.w, repack), first.name.c_str());
  return s;
}

}  // namespace

bool cuda_ops::repack_experts() const {
  const char* env = std::getenv("DSV4_CUDA_REPACK");
  return repack_experts_ && !(env && std::strcmp(env, "0") == 0);
}

bool cuda_ops::repack_dense() const {
  const char* env = std::getenv("DSV4_CUDA_REPACK_DENSE");
  return repack_dense_ && !(env && std::strcmp(env, "0") == 0);
}

std::unique_ptr<prepared_linear> cuda_ops::prepare_linear(const linear_weight& w) {
  auto p = std::make_unique<cuda_linear>();
  p->out = w.out;
  p->in = w.in;
  p->name = w.name;
  p->source_format = w.format;
  dense_layout_facts facts;
  facts.repack_enabled = repack_dense();
  facts.decode_kernels = decode_kernels();
  facts.kind = plan_format(w).kind;
  facts.rows = w.out;
  facts.cols = w.in;
  const weight_layout layout = choose_dense_layout(facts);
  p->s = upload_weights(*this, {&w}, layout);
  ++dense_linears_;
  repacked_dense_linears_ += layout == weight_layout::repacked;
  if (linear_fp8_cublaslt_supported(p->s.w)) {
    p->lt_scale = alloc(dtype::f32, {linear_fp8_cublaslt_scale_count(p->s.w)});
    check_cuda(linear_fp8_cublaslt_prepare_scales(p->s.w, p->lt_scale.data<float>(), stream()),
               w.name.c_str());
  }
  return p;
}

std::unique_ptr<prepared_experts> cuda_ops::prepare_experts(const std::vector<linear_weight>& w1,
                                                            const std::vector<linear_weight>& w3,
                                                            const std::vector<linear_weight>& w2) {
  DSV4_CHECK(!w1.empty() && w1.size() == w3.size() && w1.size() == w2.size(),
             "prepare_experts: {} / {} / {} expert weights", w1.size(), w3.size(), w2.size());
  auto p = std::make_unique<cuda_experts>();
  p->count = int64_t(w1.size());
  p->inter = w1[0].out;
  p->hidden = w1[0].in;
  p->source_format = w1[0].format;
  auto ptrs = [](const std::vector<linear_weight>& v) {
    std::vector<const linear_weight*> out;
    for (const auto& w : v) out.push_back(&w);
    return out;
  };
  // The layout (expert_layout.h) from the formats and dims before anything is uploaded.
  const format_plan f1 = plan_format(w1[0]), f3 = plan_format(w3[0]), f2 = plan_format(w2[0]);
  expert_layout_facts facts;
  facts.repack_enabled = repack_experts();
  facts.bf16_activations = act_ == dtype::bf16;
  facts.decode_kernels = decode_kernels();
  facts.wgmma_device = moe_prefill_use_wgmma(1, 1, p->count);
  facts.kind = f1.kind;
  facts.same_format = f3.kind == f1.kind && f2.kind == f1.kind && f3.scale_e8m0 == f1.scale_e8m0 &&
                      f2.scale_e8m0 == f1.scale_e8m0 && w3[0].out == p->inter &&
                      w3[0].in == p->hidden && w2[0].out == p->hidden && w2[0].in == p->inter;
  facts.hidden = p->hidden;
  facts.inter = p->inter;
  facts.experts = p->count;
  const weight_layout layout = choose_expert_layout(facts);
  p->w1 = upload_weights(*this, ptrs(w1), layout);
  p->w3 = upload_weights(*this, ptrs(w3), layout);
  p->w2 = upload_weights(*this, ptrs(w2), layout);
  if (layout == weight_layout::repacked) {  // the rule above implies both; a miss is a bug here
    DSV4_CHECK(moe_decode_supported(p->w1.w, p->w3.w, p->w2.w) &&
                   moe_prefill_supported(p->w1.w, p->w3.w, p->w2.w, 1, 1),
               "cuda: repacked experts {} not taken by moe_decode / moe_prefill", w1[0].name);
    ++repacked_expert_sets_;
  }
  ++expert_sets_;
  return p;
}

namespace {

// y = x W^T (block-diagonal over `groups`) into a fresh [T, out] tensor of out_type (the
// activation dtype, or f32).
tensor run_linear(cuda_ops& o, const tensor& x, const prepared_linear& w, int64_t groups,
                  dtype out_type) {
  check_device_type(x, o.activation_type(), "linear input");
  DSV4_CHECK(
      x.shape().rank() == 2 && groups > 0 && w.out % groups == 0 && x.size(1) == groups * w.in,
      "linear {}: input {} for weight [{}, {}] in {} group(s)", w.name, x.shape().str(), w.out,
      w.in, groups);
  const auto& cw = static_cast<const cuda_linear&>(w);
  const int64_t T = x.size(0);
  tensor y = o.alloc(out_type, {T, w.out});
  check_cuda(with_act(o.activation_type(),
                      [&](auto* a) {
                        using act_t = std::remove_pointer_t<decltype(a)>;
                        const device_weight& dw = cw.s.w;
                        // Repacked matrices (dense_layout.h) take linear_decode whatever
                        // decode_kernels says now (it was on when they were repacked).
                        const bool repacked = dw.layout == weight_layout::repacked;
                        const dense_linear_path path = choose_dense_linear_path(
                            dw.kind, dw.rows, T, groups,
                            (o.decode_kernels() || repacked) &&
                                linear_decode_grouped_supported(dw, groups),
                            linear_gemm_supported<act_t>(dw),
                            std::is_same_v<act_t, __nv_bfloat16> && dw.kind == weight_kind::bf16,
                            repacked);
                        DSV4_CHECK(!repacked || path != dense_linear_path::gemv,
                                   "linear {}: a step of {} tokens in {} group(s) that neither "
                                   "linear_decode nor linear_gemm takes on a repacked NVFP4 "
                                   "weight (set DSV4_CUDA_REPACK_DENSE=0)",
                                   w.name, T, groups);
                        auto call = [&](auto* out) {
                          if (path == dense_linear_path::linear_gemm) {
                            const size_t ws = linear_gemm_workspace_bytes<act_t>(dw);
                            tensor workspace = o.alloc(dtype::u8, {int64_t(ws)});
                            return linear_gemm(o.cublas(), act_ptr(x, a), T, dw, groups, out,
                                               workspace.data<uint8_t>(), ws, o.cublas_workspace(),
                                               k_linear_gemm_cublas_workspace_bytes, o.stream());
                          }
                          // Repacked NVFP4 at 1..8 tokens, bf16 x: the MoE decode kernel
                          // where its rule prefers it (linear_decode_nvfp4.h).
                          if constexpr (std::is_same_v<act_t, __nv_bfloat16>)
                            if (path == dense_linear_path::linear_decode && groups == 1 &&
                                linear_decode_nvfp4_preferred(dw, T) &&
                                reinterpret_cast<uintptr_t>(act_ptr(x, a)) % 16 == 0) {
                              const size_t ws = linear_decode_nvfp4_workspace_bytes(T, dw.cols);
                              tensor workspace = o.alloc(dtype::u8, {int64_t(ws)});
                              return linear_decode_nvfp4(act_ptr(x, a), T, dw, out,
                                                         workspace.data<uint8_t>(), ws, o.stream());
                            }
                          if (path == dense_linear_path::linear_decode) {
                            const size_t ws = linear_decode_workspace_bytes(T, groups * dw.cols);
                            tensor workspace = o.alloc(dtype::u8, {int64_t(ws)});
                            return linear_decode_grouped(act_ptr(x, a), T, dw, groups, out,
                                                         workspace.data<uint8_t>(), ws, o.stream());
                          }
                          return grouped_linear(act_ptr(x, a), T, dw, groups, out, o.stream());
                        };
                        if (out_type == dtype::f32) return call(y.view().ptr<float>());
                        return call(act_ptr(y, a));
                      }),
             w.name.c_str());
  return y;
}

}  // namespace

tensor cuda_ops::linear(const tensor& x, const prepared_linear& w) {
  return run_linear(*this, x, w, 1, act_);
}

tensor cuda_ops::linear_f32out(const tensor& x, const prepared_linear& w) {
  return run_linear(*this, x, w, 1, dtype::f32);
}

namespace {

// DSV4_FP8_CUBLASLT_TOKENS="min,max" (read once) replaces the rule: cuBLASLt for every supported
// matrix at min <= T <= max ("0,-1": never), for tests and A/B runs.
bool cublaslt_wins(int64_t T, int64_t rows, int64_t cols) {
  static const std::pair<int64_t, int64_t> window = [] {
    const char* env = std::getenv("DSV4_FP8_CUBLASLT_TOKENS");
    long long lo = 0, hi = -1;
    if (env && std::sscanf(env, "%lld,%lld", &lo, &hi) == 2)
      return std::pair<int64_t, int64_t>(lo, hi);
    return std::pair<int64_t, int64_t>(-1, -1);  // -1: the measured rule
  }();
  if (window.first >= 0) return T >= window.first && T <= window.second;
  return fp8_cublaslt_wins(T, rows, cols);
}

// DSV4_W8A8_WGMMA_TOKENS="min,max" (read per call, so that test_gpu_model can compare both in one
// process) replaces the rule: the wgmma kernel for every supported matrix at min <= T <= max
// ("0,-1": never).
bool w8a8_wgmma_window(int64_t T, int64_t rows, int64_t cols, double read_bytes_per_sm_cycle) {
  long long lo = 0, hi = -1;
  const char* env = std::getenv("DSV4_W8A8_WGMMA_TOKENS");
  if (env && std::sscanf(env, "%lld,%lld", &lo, &hi) == 2) return T >= lo && T <= hi;
  return w8a8_wgmma_wins(T, rows, cols, read_bytes_per_sm_cycle);
}

// The FP8-input kernel of this call (linear_fp8_dispatch.h's order and rules), or linear().
fp8_input_path fp8_input_path_of(bool decode_kernels, const tensor& x, const cuda_linear& cw,
                                 double read_bytes_per_sm_cycle) {
  const int64_t T = x.shape().rank() == 2 ? x.size(0) : 0;
  if (!decode_kernels || T < 1) return fp8_input_path::linear;
  const device_weight& dw = cw.s.w;
  return choose_fp8_input_path(
      w8a8_wgmma_window(T, dw.rows, dw.cols, read_bytes_per_sm_cycle),
      T <= k_linear_w8a8_wgmma_max_tokens && linear_w8a8_wgmma_supported(dw),
      cublaslt_wins(T, dw.rows, dw.cols), cw.lt_scale.defined(), fp8act_wins(T, dw.rows, dw.cols),
      linear_decode_fp8act_supported(dw));
}

}  // namespace

bool cuda_ops::linear_fp8_input_quantizes(const tensor& x, const prepared_linear& w) const {
  // fp8act_quantize_kernel: the block amax, the same power-of-two scale and e4m3 rounding as
  // fake_quant_fp8_act (quantize.h fp8_block_warp). DSV4_FP8_INPUT_COPY=1 (read per call): the
  // caller's quantized copy as before, so a test can compare both in one process bit for bit.
  const char* copy = std::getenv("DSV4_FP8_INPUT_COPY");
  if (copy && std::strcmp(copy, "1") == 0) return false;
  return fp8_input_path_of(decode_kernels(), x, static_cast<const cuda_linear&>(w),
                           read_bytes_per_sm_cycle_) != fp8_input_path::linear;
}

tensor cuda_ops::linear_fp8_input(const tensor& x, const prepared_linear& w) {
  const auto& cw = static_cast<const cuda_linear&>(w);
  const device_weight& dw = cw.s.w;
  const fp8_input_path path = fp8_input_path_of(decode_kernels(), x, cw, read_bytes_per_sm_cycle_);
  if (path == fp8_input_path::linear) return linear(x, w);
  const int64_t T = x.size(0);
  check_device_type(x, activation_type(), "linear input");
  DSV4_CHECK(x.size(1) == w.in, "linear {}: input {} for weight [{}, {}]", w.name, x.shape().str(),
             w.out, w.in);
  tensor y = alloc(act_, {T, w.out});
  const size_t ws =
      path == fp8_input_path::w8a8_wgmma ? linear_w8a8_wgmma_workspace_bytes(T, dw.rows, dw.cols)
      : path == fp8_input_path::cublaslt ? linear_fp8_cublaslt_workspace_bytes(T, dw.rows, dw.cols)
                                         : linear_decode_fp8act_workspace_bytes(T, dw.cols);
  tensor workspace = alloc(dtype::u8, {int64_t(ws)});
  uint8_t* wp = workspace.data<uint8_t>();
  check_cuda(
      with_act(act_,
               [&](auto* a) -> cudaError_t {
                 switch (path) {
                   case fp8_input_path::w8a8_wgmma:
                     return linear_w8a8_wgmma(act_ptr(x, a), T, dw, act_ptr(y, a), wp, ws,
                                              stream());
                   case fp8_input_path::cublaslt:
                     return linear_fp8_cublaslt(reinterpret_cast<cublasLtHandle_t>(cublas()),
                                                act_ptr(x, a), T, dw, cw.lt_scale.data<float>(),
                                                act_ptr(y, a), wp, ws, stream());
                   case fp8_input_path::fp8act:
                     break;
                 }
                 return linear_decode_fp8act(act_ptr(x, a), T, dw, act_ptr(y, a), wp, ws, stream());
               }),
      w.name.c_str());
  return y;
}

tensor cuda_ops::grouped_linear(const tensor& x, const prepared_linear& w, int64_t groups) {
  return run_linear(*this, x, w, groups, act_);
}

void cuda_ops::moe_route(const tensor& x, const prepared_linear& gate, const tensor* bias,
                         const tensor* tid2eid, const tensor& ids, router_score score,
                         int64_t top_k, bool normalize, float route_scale, tensor& indices,
                         tensor& weights) {
  check_device_type(x, act_, "router input");
  check_device_type(indices, dtype::i32, "router indices");
  check_device_type(weights, dtype::f32, "router weights");
  // f32 logits through the dense-linear dispatch (linear_decode from 2 tokens on), then the
  // selection kernel.
  const tensor logits = run_linear(*this, x, gate, 1, dtype::f32);
  const int64_t T = x.size(0);
  check_cuda(cuda::moe_route_select(
                 logits.data<float>(), T, gate.out, bias ? bias->data<float>() : nullptr,
                 tid2eid ? tid2eid->data<int32_t>() : nullptr, tid2eid ? tid2eid->size(0) : 0,
                 ids.data<int32_t>(), moe_score(uint8_t(score)), top_k, normalize, route_scale,
                 indices.data<int32_t>(), weights.data<float>(), stream_),
             "moe_route");
}

namespace {

tensor run_moe_experts(cuda_ops& o, const tensor& x, const tensor& indices, const tensor& weights,
                       const prepared_experts& experts, float swiglu_limit, bool official) {
  const dtype act = o.activation_type();
  check_device_type(x, act, "moe input");
  check_device_type(indices, dtype::i32, "moe indices");
  check_device_type(weights, dtype::f32, "moe weights");
  const auto& ce = static_cast<const cuda_experts&>(experts);
  const int64_t T = x.size(0);
  const int64_t k = indices.size(1);
  DSV4_CHECK(x.size(1) == ce.hidden, "moe: input {} for hidden {}", x.shape().str(), ce.hidden);
  tensor y = o.alloc(act, {T, ce.hidden});
  // Repacked experts (prepare_experts, expert_layout.h) are read only by moe_decode and
  // moe_prefill's wgmma core: they take every step whatever decode_kernels says now (it was on
  // when they were repacked), and nothing falls through to moe_experts.
  const bool repacked = ce.w1.w.layout == weight_layout::repacked;
  if ((o.decode_kernels() || repacked) && T <= k_moe_decode_max_tokens &&
      moe_decode_supported(ce.w1.w, ce.w3.w, ce.w2.w)) {
    const size_t ws = moe_decode_workspace_bytes(T, k, ce.count, ce.hidden, ce.inter);
    tensor workspace = o.alloc(dtype::u8, {int64_t(ws)});
    check_cuda(with_act(act,
                        [&](auto* a) {
                          return official ? cuda::moe_decode_experts_official(
                                                act_ptr(x, a), T, indices.data<int32_t>(),
                                                weights.data<float>(), k, ce.w1.w, ce.w3.w, ce.w2.w,
                                                swiglu_limit, workspace.data<void>(), ws,
                                                act_ptr(y, a), o.stream())
                                          : cuda::moe_decode_experts(
                                                act_ptr(x, a), T, indices.data<int32_t>(),
                                                weights.data<float>(), k, ce.w1.w, ce.w3.w, ce.w2.w,
                                                swiglu_limit, workspace.data<void>(), ws,
                                                act_ptr(y, a), o.stream());
                        }),
               official ? "moe_decode_experts_official" : "moe_decode_experts");
    return y;
  }
  // Prefill-sized steps with bf16 activations: tensor cores (moe_prefill rounds x and h to BF16
  // as it stages them, so f32 activations keep the f32 kernel below).
  if ((o.decode_kernels() || repacked) && act == dtype::bf16 &&
      moe_prefill_supported(ce.w1.w, ce.w3.w, ce.w2.w, T, k)) {
    using bf16 = __nv_bfloat16;
    const size_t ws = moe_prefill_workspace_bytes(T, k, ce.count, ce.hidden, ce.inter);
    tensor workspace = o.alloc(dtype::u8, {int64_t(ws)});
    auto* xb = x.view().ptr<bf16>();
    auto* yb = y.view().ptr<bf16>();
    check_cuda(official
                   ? moe_prefill_experts_official(
                         xb, T, indices.data<int32_t>(), weights.data<float>(), k, ce.w1.w, ce.w3.w,
                         ce.w2.w, swiglu_limit, workspace.data<void>(), ws, yb, o.stream())
                   : moe_prefill_experts(xb, T, indices.data<int32_t>(), weights.data<float>(), k,
                                         ce.w1.w, ce.w3.w, ce.w2.w, swiglu_limit,
                                         workspace.data<void>(), ws, yb, o.stream()),
               official ? "moe_prefill_experts_official" : "moe_prefill_experts");
    return y;
  }
  DSV4_CHECK(!repacked,
             "moe: a step of {} tokens x top-{} that moe_decode / moe_prefill do not take "
             "on repacked experts (set DSV4_CUDA_REPACK=0)",
             T, k);
  const size_t ws = moe_experts_workspace_bytes(T, k, ce.count, ce.hidden, ce.inter);
  tensor workspace = o.alloc(dtype::u8, {int64_t(ws)});
  check_cuda(
      with_act(act,
               [&](auto* a) {
                 return official
                            ? cuda::moe_experts_official(
                                  act_ptr(x, a), T, indices.data<int32_t>(), weights.data<float>(),
                                  k, ce.w1.w, ce.w3.w, ce.w2.w, swiglu_limit,
                                  workspace.data<void>(), ws, act_ptr(y, a), o.stream())
                            : cuda::moe_experts(act_ptr(x, a), T, indices.data<int32_t>(),
                                                weights.data<float>(), k, ce.w1.w, ce.w3.w, ce.w2.w,
                                                swiglu_limit, workspace.data<void>(), ws,
                                                act_ptr(y, a), o.stream());
               }),
      official ? "moe_experts_official" : "moe_experts");
  return y;
}

}  // namespace

tensor cuda_ops::moe_experts_official(const tensor& x, const tensor& indices, const tensor& weights,
                                      const prepared_experts& experts, float swiglu_limit) {
  return run_moe_experts(*this, x, indices, weights, experts, swiglu_limit, true);
}

tensor cuda_ops::moe_experts(const tensor& x, const tensor& indices, const tensor& weights,
                             const prepared_experts& experts, float swiglu_limit) {
  return run_moe_experts(*this, x, indices, weights, experts, swiglu_limit, false);
}

}  // namespace dsv4::cuda
