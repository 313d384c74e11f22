// cuda_ops: the official precision mode's quantize-dequantize ops (quantize.h); the routed
// experts' official order lives with the other MoE adapters (cuda_ops_linear.cpp).
#include <cmath>

#include "backends/cuda/act_dispatch.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/quantize.h"
#include "core/error.h"
#include "io/kv_record.h"

namespace dsv4::cuda {

namespace {

void check_rows(const tensor& rows, const char* what) {
  DSV4_CHECK(rows.defined() && rows.view().device == device_kind::cuda && rows.type() == dtype::i32,
             "cuda op: {} rows must be an i32 device tensor", what);
}

bool power_of_two(int64_t n) {
  return n > 0 && (n & (n - 1)) == 0;
}

}  // namespace

void cuda_ops::fake_quant_fp8_act(tensor& x, int64_t block) {
  check_device_type(x, act_, "fake_quant_fp8_act input");
  DSV4_CHECK(block > 0 && x.shape().rank() >= 1, "fake_quant_fp8_act: block {} for {}", block,
             x.shape().str());
  const int64_t n = x.size(x.shape().rank() - 1);
  const int64_t rows = n ? x.numel() / n : 0;
  check_cuda(with_act(act_,
                      [&](auto* a) {
                        return cuda::fake_quant_fp8_rows(act_ptr(x, a), n, nullptr, 0, rows, n,
                                                         block, stream_);
                      }),
             "fake_quant_fp8_act");
}

void cuda_ops::fake_quant_kv_fp8(tensor& pool, const tensor& rows, int64_t nope_dims,
                                 int64_t block) {
  if (pool.type() == dtype::u8) {
    // A record pool (layer_cache.h): its rows were rounded this way when they were packed
    // (io/kv_record.h: decode(encode(x)) == fake_quant_kv_fp8(x) bit for bit).
    check_device_type(pool, dtype::u8, "fake_quant_kv_fp8 record pool");
    DSV4_CHECK(pool.shape().rank() == 2 && block == k_kv_record_quant_block &&
                   kv_cache_record_layout_of(nope_dims + k_kv_cache_record_rope_dims, pool.size(1))
                           .nope_dims == nope_dims,
               "fake_quant_kv_fp8: {} nope dims, block {} for record pool {}", nope_dims, block,
               pool.shape().str());
    return;
  }
  check_device_type(pool, act_, "fake_quant_kv_fp8 pool");
  check_rows(rows, "fake_quant_kv_fp8");
  DSV4_CHECK(block > 0 && nope_dims >= 0 && pool.shape().rank() == 2 && nope_dims <= pool.size(1),
             "fake_quant_kv_fp8: {} nope dims, block {} for pool {}", nope_dims, block,
             pool.shape().str());
  check_cuda(with_act(act_,
                      [&](auto* a) {
                        return cuda::fake_quant_fp8_rows(act_ptr(pool, a), pool.size(1),
                                                         rows.data<int32_t>(), pool.size(0),
                                                         rows.numel(), nope_dims, block, stream_);
                      }),
             "fake_quant_kv_fp8");
}

void cuda_ops::hadamard_fp4(tensor& x, int64_t heads, int64_t head_dim) {
  check_device_type(x, act_, "hadamard_fp4 input");
  DSV4_CHECK(
      power_of_two(head_dim) && heads > 0 && x.shape().rank() == 2 && x.size(1) == heads * head_dim,
      "hadamard_fp4: {} heads of {} for {}", heads, head_dim, x.shape().str());
  check_cuda(with_act(act_,
                      [&](auto* a) {
                        return cuda::hadamard_fp4_rows(
                            act_ptr(x, a), x.size(1), nullptr, 0, x.size(0), heads, head_dim,
                            float(1.0 / std::sqrt(double(head_dim))), stream_);
                      }),
             "hadamard_fp4");
}

void cuda_ops::hadamard_fp4_rows(tensor& pool, const tensor& rows, int64_t heads,
                                 int64_t head_dim) {
  check_device_type(pool, act_, "hadamard_fp4_rows pool");
  check_rows(rows, "hadamard_fp4_rows");
  DSV4_CHECK(power_of_two(head_dim) && heads > 0 && pool.shape().rank() == 2 &&
                 pool.size(1) == heads * head_dim,
             "hadamard_fp4_rows: {} heads of {} for pool {}", heads, head_dim, pool.shape().str());
  check_cuda(with_act(act_,
                      [&](auto* a) {
                        return cuda::hadamard_fp4_rows(
                            act_ptr(pool, a), pool.size(1), rows.data<int32_t>(), pool.size(0),
                            rows.numel(), heads, head_dim, float(1.0 / std::sqrt(double(head_dim))),
                            stream_);
                      }),
             "hadamard_fp4_rows");
}

}  // namespace dsv4::cuda
