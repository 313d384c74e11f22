// The routed-expert weight layout (src/backends/cuda/linear.h weight_layout, expert_layout.h):
// the load-time rule that picks the repacked layout, the validation that makes every
// checkpoint-only kernel refuse it, and the support rules of the kernels that read it (host
// logic only; runs without a GPU, where moe_prefill_supported's wgmma condition is false).
#include <gtest/gtest.h>

#include <cstdint>

#include "backends/cuda/dense_layout.h"
#include "backends/cuda/expert_layout.h"
#include "backends/cuda/linear.h"
#include "backends/cuda/linear_decode.h"
#include "backends/cuda/linear_decode_fp8act.h"
#include "backends/cuda/linear_gemm.h"
#include "backends/cuda/moe_decode.h"
#include "backends/cuda/moe_prefill.h"
#include "backends/cuda/moe_repack.h"

namespace dsv4::cuda {
namespace {

constexpr auto checkpoint = weight_layout::checkpoint;
constexpr auto repacked = weight_layout::repacked;

// DeepSeek-V4 Flash routed experts (hidden 4096, inter 2048, 256 experts) on an H100 with bf16
// activations and the decode kernels on: every condition of the rule holds.
expert_layout_facts flash_mxfp4() {
  expert_layout_facts f;
  f.repack_enabled = true;
  f.bf16_activations = true;
  f.decode_kernels = true;
  f.wgmma_device = true;
  f.kind = weight_kind::mxfp4;
  f.same_format = true;
  f.hidden = 4096;
  f.inter = 2048;
  f.experts = 256;
  return f;
}

TEST(expert_layout, repacks_four_bit_experts_when_every_step_kernel_reads_it) {
  EXPECT_EQ(choose_expert_layout(flash_mxfp4()), repacked);
  expert_layout_facts nv = flash_mxfp4();
  nv.kind = weight_kind::nvfp4;
  EXPECT_EQ(choose_expert_layout(nv), repacked);
  expert_layout_facts pro = flash_mxfp4();  // Pro: hidden 7168, inter 3072, 384 experts
  pro.hidden = 7168, pro.inter = 3072, pro.experts = 384;
  EXPECT_EQ(choose_expert_layout(pro), repacked);
}

TEST(expert_layout, each_missing_condition_keeps_the_checkpoint_layout) {
  const auto without = [](auto change) {
    expert_layout_facts f = flash_mxfp4();
    change(f);
    return choose_expert_layout(f);
  };
  EXPECT_EQ(without([](auto& f) { f.repack_enabled = false; }), checkpoint);
  EXPECT_EQ(without([](auto& f) { f.bf16_activations = false; }), checkpoint);  // f32 mode
  EXPECT_EQ(without([](auto& f) { f.decode_kernels = false; }), checkpoint);    // CPU parity
  EXPECT_EQ(without([](auto& f) { f.wgmma_device = false; }), checkpoint);
  EXPECT_EQ(without([](auto& f) { f.same_format = false; }), checkpoint);
  EXPECT_EQ(without([](auto& f) { f.kind = weight_kind::fp8_block; }), checkpoint);
  EXPECT_EQ(without([](auto& f) { f.kind = weight_kind::bf16; }), checkpoint);
  EXPECT_EQ(without([](auto& f) { f.hidden = 4096 + 64; }), checkpoint);  // odd dims
  EXPECT_EQ(without([](auto& f) { f.inter = 2048 + 32; }), checkpoint);
  EXPECT_EQ(without([](auto& f) { f.experts = 2049; }), checkpoint);
  EXPECT_EQ(without([](auto& f) { f.experts = 0; }), checkpoint);
}

// A stacked 4-bit weight with fake (aligned, never dereferenced) device pointers.
device_weight fake_weight(weight_kind kind, int64_t rows, int64_t cols, int64_t count,
                          weight_layout layout) {
  device_weight w;
  w.kind = kind;
  w.rows = rows;
  w.cols = cols;
  w.count = count;
  w.data = reinterpret_cast<const void*>(uintptr_t(1) << 20);
  w.scale = reinterpret_cast<const void*>(uintptr_t(1) << 30);
  w.scale_e8m0 = kind == weight_kind::mxfp4;
  w.layout = layout;
  return w;
}

TEST(expert_layout, validate_weight_accepts_repacked_only_where_the_caller_reads_it) {
  for (weight_kind k : {weight_kind::mxfp4, weight_kind::nvfp4}) {
    const device_weight rp = fake_weight(k, 2048, 4096, 4, repacked);
    EXPECT_EQ(validate_weight(rp), cudaErrorInvalidValue);
    EXPECT_EQ(validate_weight(rp, true), cudaSuccess);
    EXPECT_EQ(validate_weight(fake_weight(k, 2048, 4096, 4, checkpoint)), cudaSuccess);
    // Dims the 16 x 128 tiles do not divide.
    EXPECT_EQ(validate_weight(fake_weight(k, 2040, 4096, 4, repacked), true),
              cudaErrorInvalidValue);
    EXPECT_EQ(validate_weight(fake_weight(k, 2048, 4096 - 64, 4, repacked), true),
              cudaErrorInvalidValue);
  }
  // Only 4-bit kinds have a repacked layout.
  device_weight fp8 = fake_weight(weight_kind::fp8_block, 2048, 4096, 1, repacked);
  EXPECT_EQ(validate_weight(fp8, true), cudaErrorInvalidValue);
  device_weight bad = fake_weight(weight_kind::mxfp4, 2048, 4096, 1, checkpoint);
  bad.layout = static_cast<weight_layout>(7);
  EXPECT_EQ(validate_weight(bad, true), cudaErrorInvalidValue);
}

// Dense kernels refuse repacked weights, except linear_decode and linear_gemm on NVFP4 (the
// dense repacked layout, dense_layout.h); linear_decode needs 2-byte aligned scales there.
TEST(expert_layout, dense_kernels_refuse_repacked_weights) {
  for (weight_kind k : {weight_kind::mxfp4, weight_kind::nvfp4}) {
    const device_weight cp = fake_weight(k, 2048, 4096, 1, checkpoint);
    const device_weight rp = fake_weight(k, 2048, 4096, 1, repacked);
    const bool nv = k == weight_kind::nvfp4;
    EXPECT_TRUE(linear_decode_supported(cp));
    EXPECT_EQ(linear_decode_supported(rp), nv);
    EXPECT_EQ(linear_gemm_supported<float>(rp), nv);
    EXPECT_EQ(linear_gemm_supported<__nv_bfloat16>(rp), nv);
    EXPECT_FALSE(linear_decode_fp8act_supported(rp));
  }
  device_weight odd = fake_weight(weight_kind::nvfp4, 2048, 4096, 1, repacked);
  odd.scale = reinterpret_cast<const void*>((uintptr_t(1) << 30) + 1);
  EXPECT_FALSE(linear_decode_supported(odd));
  EXPECT_TRUE(linear_decode_supported(fake_weight(weight_kind::nvfp4, 2048, 4096, 1, checkpoint)));
}

// The dense layout rule (dense_layout.h): NVFP4 of >= 8 MiB with the repack tiles' dims,
// repacking and the decode kernels on; anything else keeps the checkpoint layout.
TEST(expert_layout, dense_nvfp4_is_repacked_only_where_the_rule_allows) {
  dense_layout_facts f;
  f.repack_enabled = true;
  f.decode_kernels = true;
  f.kind = weight_kind::nvfp4;
  f.rows = 8 * 1024;  // Flash wo_a (grouped: the rule needs no group count)
  f.cols = 4096;
  EXPECT_EQ(choose_dense_layout(f), repacked);
  const auto without = [&](auto change) {
    dense_layout_facts g = f;
    change(g);
    return choose_dense_layout(g);
  };
  EXPECT_EQ(without([](auto& g) { g.repack_enabled = false; }), checkpoint);
  EXPECT_EQ(without([](auto& g) { g.decode_kernels = false; }), checkpoint);
  EXPECT_EQ(without([](auto& g) { g.kind = weight_kind::mxfp4; }), checkpoint);
  EXPECT_EQ(without([](auto& g) { g.kind = weight_kind::fp8_block; }), checkpoint);
  EXPECT_EQ(without([](auto& g) { g.kind = weight_kind::bf16; }), checkpoint);
  EXPECT_EQ(without([](auto& g) { g.rows = 8 * 1024 + 8; }), checkpoint);
  EXPECT_EQ(without([](auto& g) { g.cols = 4096 + 64; }), checkpoint);
  EXPECT_EQ(without([](auto& g) { g.rows = 0; }), checkpoint);
  // Size: Pro shared w13 (3072 x 7168, 10.5 MiB) and Flash wq_b (32768 x 1024, 16 MiB) are
  // repacked; Pro wq_a (1536 x 7168, 5.25 MiB), Flash shared w13 (2048 x 4096, 4 MiB) and the
  // 8 MiB edge minus one row tile are not.
  EXPECT_EQ(without([](auto& g) { g.rows = 3072, g.cols = 7168; }), repacked);
  EXPECT_EQ(without([](auto& g) { g.rows = 32768, g.cols = 1024; }), repacked);
  EXPECT_EQ(without([](auto& g) { g.rows = 16384, g.cols = 1024; }), repacked);  // 8 MiB
  EXPECT_EQ(without([](auto& g) { g.rows = 16384 - 16, g.cols = 1024; }), checkpoint);
  EXPECT_EQ(without([](auto& g) { g.rows = 1536, g.cols = 7168; }), checkpoint);
  EXPECT_EQ(without([](auto& g) { g.rows = 2048, g.cols = 4096; }), checkpoint);
}

TEST(expert_layout, moe_kernels_take_one_layout_for_all_three_matrices) {
  for (weight_kind k : {weight_kind::mxfp4, weight_kind::nvfp4}) {
    for (weight_layout l : {checkpoint, repacked}) {
      const device_weight w1 = fake_weight(k, 2048, 4096, 256, l),
                          w3 = fake_weight(k, 2048, 4096, 256, l),
                          w2 = fake_weight(k, 4096, 2048, 256, l);
      EXPECT_TRUE(moe_decode_supported(w1, w3, w2));
      const weight_layout other = l == checkpoint ? repacked : checkpoint;
      const device_weight m2 = fake_weight(k, 4096, 2048, 256, other);
      EXPECT_FALSE(moe_decode_supported(w1, w3, m2));
      EXPECT_FALSE(moe_prefill_supported(w1, w3, m2, 1024, 6));
    }
    // The checkpoint layout needs no wgmma device; the repacked one does (and so is not taken
    // where moe_prefill_use_wgmma is false, e.g. here without a GPU).
    const device_weight c1 = fake_weight(k, 2048, 4096, 256, checkpoint),
                        c2 = fake_weight(k, 4096, 2048, 256, checkpoint);
    EXPECT_TRUE(moe_prefill_supported(c1, c1, c2, 1024, 6));
    const device_weight r1 = fake_weight(k, 2048, 4096, 256, repacked),
                        r2 = fake_weight(k, 4096, 2048, 256, repacked);
    EXPECT_EQ(moe_prefill_supported(r1, r1, r2, 1024, 6), moe_prefill_use_wgmma(1024, 6, 256));
  }
}

// decode_pair<i> (the prefill wgmma core's per-step decode) gives the checkpoint decode's pair
// for every bit of the word: all 32 single-bit words and random words.
TEST(expert_layout, decode_pair_matches_the_checkpoint_pairs) {
  const auto check = [](uint32_t w) {
    const uint32_t u = fp4_repack::repack_word(w);
    EXPECT_EQ(fp4_repack::decode_pair<0>(u), fp4_repack::checkpoint_pair(w, 0)) << w;
    EXPECT_EQ(fp4_repack::decode_pair<1>(u), fp4_repack::checkpoint_pair(w, 1)) << w;
    EXPECT_EQ(fp4_repack::decode_pair<2>(u), fp4_repack::checkpoint_pair(w, 2)) << w;
    EXPECT_EQ(fp4_repack::decode_pair<3>(u), fp4_repack::checkpoint_pair(w, 3)) << w;
  };
  for (int b = 0; b < 32; ++b) check(uint32_t(1) << b);
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < 100000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    check(uint32_t(state >> 32));
  }
}

}  // namespace
}  // namespace dsv4::cuda
