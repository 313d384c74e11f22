// The FP8-input routing rules of src/backends/cuda/linear_fp8_dispatch.h and the device class they
// read (device_info.h; host logic only, runs without a GPU). The cases are the measured shapes the
// header's comments cite (bench/RESULTS.md sessions 24, 26 and 37): a change of rule must come with
// new measurements and a change here.
#include <gtest/gtest.h>

#include "backends/cuda/device_info.h"
#include "backends/cuda/linear_fp8_dispatch.h"

namespace dsv4::cuda {
namespace {

struct fp8_shape {
  const char* name;
  int64_t rows, cols;
};
constexpr fp8_shape flash_wq_b{"flash wq_b", 32768, 1024}, flash_wo_b{"flash wo_b", 4096, 8192},
    flash_wq_a{"flash wq_a", 1024, 4096}, flash_shared_w13{"flash shared w13", 2048, 4096},
    flash_shared_w2{"flash shared w2", 4096, 2048}, flash_wkv{"flash wkv", 512, 4096},
    pro_wq_b{"pro wq_b", 65536, 1536}, pro_wo_b{"pro wo_b", 7168, 16384},
    pro_wq_a{"pro wq_a", 1536, 7168}, pro_shared_w13{"pro shared w13", 3072, 7168},
    pro_shared_w2{"pro shared w2", 7168, 3072};

// An H100 SXM's attributes as public deviceQuery outputs give them (2619 MHz HBM3, 5120-bit bus,
// 132 SMs at 1980 MHz; not read on this project's machines, where no H100 has been lent since
// session 28).
device_info h100_sxm() {
  device_info d;
  d.sm_count = 132;
  d.sm_clock_khz = 1980000;
  d.memory_clock_khz = 2619000;
  d.memory_bus_bits = 5120;
  return d;
}

constexpr double h100_class = 12.8, h200_class = 18.4;

bool wgmma(const fp8_shape& s, int64_t T, double bytes_per_cycle) {
  return w8a8_wgmma_wins(T, s.rows, s.cols, bytes_per_cycle);
}

TEST(device_class, bytes_per_sm_cycle_from_the_clocks_and_bus) {
  const device_info h100 = h100_sxm();
  // 2 transfers x 2.619e9 x 640 bytes = 3352.3 GB/s; / (132 x 1.98e9) = 12.83 bytes a cycle.
  EXPECT_NEAR(peak_memory_gbps(h100), 3352.32, 0.01);
  EXPECT_NEAR(peak_read_bytes_per_sm_cycle(h100), 12.826, 0.001);
  EXPECT_LT(peak_read_bytes_per_sm_cycle(h100), k_rich_read_bytes_per_sm_cycle);
  device_info unknown = h100;
  unknown.memory_clock_khz = 0;  // an attribute the driver did not give
  EXPECT_EQ(peak_memory_gbps(unknown), 0.0);
  EXPECT_EQ(peak_read_bytes_per_sm_cycle(unknown), 0.0);
  unknown = h100;
  unknown.sm_clock_khz = 0;
  EXPECT_EQ(peak_read_bytes_per_sm_cycle(unknown), 0.0);
}

TEST(w8a8_wgmma_rule, flash_wo_b_at_9_to_16_tokens_only_on_the_bandwidth_rich_class) {
  for (int64_t T : {9, 12, 16}) {
    EXPECT_TRUE(wgmma(flash_wo_b, T, h200_class))
        << T;  // H200 l37a: 15.7 / 16.0 vs W8A8 16.4 / 17.1
    EXPECT_FALSE(wgmma(flash_wo_b, T, h100_class)) << T;  // H100 w8a8w: 17.9 / 19.4 vs 17.7 / 18.3
    EXPECT_FALSE(wgmma(flash_wo_b, T, 0.0)) << T;         // unknown: the H100's rule
  }
  for (int64_t T : {17, 32, 48, 64}) {
    EXPECT_TRUE(wgmma(flash_wo_b, T, h200_class)) << T;
    EXPECT_TRUE(wgmma(flash_wo_b, T, h100_class)) << T;
  }
}

TEST(w8a8_wgmma_rule, the_same_elsewhere_on_both_classes) {
  for (double c : {h100_class, h200_class}) {
    for (const fp8_shape& s : {flash_wq_b, pro_wq_b, pro_wo_b, pro_shared_w13, pro_shared_w2})
      for (int64_t T : {9, 16, 17, 32, 33, 48, 64}) EXPECT_TRUE(wgmma(s, T, c)) << s.name << T;
    for (const fp8_shape& s : {flash_wq_a, flash_shared_w13, flash_shared_w2, pro_wq_a}) {
      for (int64_t T : {9, 16, 17, 32}) EXPECT_FALSE(wgmma(s, T, c)) << s.name << T;
      for (int64_t T : {33, 48, 64}) EXPECT_TRUE(wgmma(s, T, c)) << s.name << T;
    }
    for (int64_t T : {9, 32, 48, 64}) EXPECT_FALSE(wgmma(flash_wkv, T, c)) << T;  // 2 MiB
    for (const fp8_shape& s : {flash_wq_b, pro_wq_b, pro_wo_b}) {
      for (int64_t T : {1, 8, 65, 128}) EXPECT_FALSE(wgmma(s, T, c)) << s.name << T;
    }
  }
}

TEST(fp8act_rule, tokens_and_shapes) {
  for (const fp8_shape& s : {flash_wq_b, flash_wo_b, flash_shared_w2, pro_wq_b, pro_wo_b})
    for (int64_t T : {1, 2, 8}) EXPECT_TRUE(fp8act_wins(T, s.rows, s.cols)) << s.name << T;
  EXPECT_FALSE(fp8act_wins(0, flash_wq_b.rows, flash_wq_b.cols));
  // 9-16 tokens: all but the short rows of the Flash shared w2.
  EXPECT_TRUE(fp8act_wins(16, pro_wq_b.rows, pro_wq_b.cols));
  EXPECT_FALSE(fp8act_wins(9, flash_shared_w2.rows, flash_shared_w2.cols));
  EXPECT_FALSE(fp8act_wins(17, pro_wq_b.rows, pro_wq_b.cols));
  // Few long rows to 32 tokens.
  EXPECT_TRUE(fp8act_wins(32, flash_wq_a.rows, flash_wq_a.cols));
  EXPECT_TRUE(fp8act_wins(32, flash_shared_w13.rows, flash_shared_w13.cols));
  EXPECT_FALSE(fp8act_wins(33, flash_wq_a.rows, flash_wq_a.cols));
  EXPECT_TRUE(fp8act_wins(32, pro_wq_a.rows, pro_wq_a.cols));  // 1536 rows of 7168: long rows
  EXPECT_FALSE(fp8act_wins(17, pro_shared_w13.rows, pro_shared_w13.cols));  // 3072 rows
}

TEST(cublaslt_rule, bytes_by_token_band) {
  EXPECT_TRUE(fp8_cublaslt_wins(9, pro_wq_b.rows, pro_wq_b.cols));       // >= 64 MiB from 9
  EXPECT_FALSE(fp8_cublaslt_wins(9, flash_wq_b.rows, flash_wq_b.cols));  // 32 MiB: from 16
  EXPECT_TRUE(fp8_cublaslt_wins(16, flash_wq_b.rows, flash_wq_b.cols));
  EXPECT_FALSE(fp8_cublaslt_wins(32, pro_shared_w13.rows, pro_shared_w13.cols));  // 21 MiB
  EXPECT_TRUE(fp8_cublaslt_wins(33, pro_shared_w13.rows, pro_shared_w13.cols));
  EXPECT_FALSE(fp8_cublaslt_wins(64, flash_wq_a.rows, flash_wq_a.cols));  // 4 MiB
  EXPECT_FALSE(fp8_cublaslt_wins(8, pro_wq_b.rows, pro_wq_b.cols));
  EXPECT_FALSE(fp8_cublaslt_wins(1025, pro_wq_b.rows, pro_wq_b.cols));
}

TEST(fp8_input_path, order_and_support) {
  using p = fp8_input_path;
  // wins, ok for wgmma / cuBLASLt / W8A8 in that order.
  EXPECT_EQ(choose_fp8_input_path(true, true, true, true, true, true), p::w8a8_wgmma);
  EXPECT_EQ(choose_fp8_input_path(true, false, true, true, false, true), p::cublaslt);
  EXPECT_EQ(choose_fp8_input_path(true, false, true, true, true, true), p::fp8act);  // W8A8 first
  EXPECT_EQ(choose_fp8_input_path(false, true, true, false, true, true), p::fp8act);
  EXPECT_EQ(choose_fp8_input_path(false, true, true, true, true, false), p::cublaslt);
  EXPECT_EQ(choose_fp8_input_path(false, true, true, false, false, true), p::linear);
  EXPECT_EQ(choose_fp8_input_path(false, false, false, true, false, true), p::linear);
}

}  // namespace
}  // namespace dsv4::cuda
