// The warp-specialized decode kernel's consumer schedules, kernel modes and run-time options
// (template and run-time arguments of attention_decode_ws_kernel, attention_decode_ws.cuh), and
// the host's choice of them from a plan (attention_decode_ws_modes.cpp). No CUDA: the kernel and
// the host launch code share these constants.
#pragma once

#include "backends/cuda/attention_decode.h"

namespace dsv4::cuda {

// Consumer schedules of the warp-specialized kernel: in turn, alternate tiles (plan.alt). The
// alternate-tile schedule's template value is a set of bits: 1 alternate tiles, 2 lazy rescale
// (attention_decode_ws.cuh); k_ws_alt, the one plan.alt runs, has both.
constexpr int k_ws_in_turn = 0;
constexpr int k_ws_alt_bit = 1;
constexpr int k_ws_lazy_bit = 2;
constexpr int k_ws_alt = k_ws_alt_bit | k_ws_lazy_bit;
constexpr bool ws_sched_is_alt(int sched) {
  return (sched & k_ws_alt_bit) != 0;
}
// Kernel modes: split (partials for the combine kernel), split with plan.fold, one split only (a
// template mode, so that the split kernel's code is not touched by it). (Mode 1 was the fused
// cluster kernel, removed in session 13; the numbers are kept.)
constexpr int k_ws_split = 0;
constexpr int k_ws_fold = 2;
// plan.partials_l2 (split, alternate tiles): the partials stored with L2 evict_last.
constexpr int k_ws_split_keep = 3;
// plan.partials_bf16 (split, alternate tiles): the partials stored as bf16 with L2 evict_last.
constexpr int k_ws_split_bf16 = 4;
// Run-time options of the ws kernel (`opts`), bench diagnoses (plan.diag): no row copies (the
// consumers' chain alone) / no products (the ring alone).
constexpr int k_ws_opt_no_load = 1;
constexpr int k_ws_opt_no_compute = 2;
// FP8 records (plan.diag 4): references by 32-bit divisions even for power-of-two block sizes.
constexpr int k_ws_opt_divisions = 4;
// TMA key tiles (plan.diag 128): 8 copies of 2-D boxes (32 rows x 64 channels) per tile, the form
// before session 32, instead of one 3-D box (attention_decode.cu, encode_key_map).
constexpr int k_ws_opt_key_box2d = 8;
// plan.tables_early: the key space and the first tiles' indices before griddepcontrol.wait.
constexpr int k_ws_opt_tables_early = 16;

// The ws kernel's run-time options for a plan (k_ws_opt_*: bench diagnoses, plan.diag;
// plan.tables_early).
int attention_decode_ws_opts(const attention_decode_plan& plan);
// The consumer schedule a plan runs (k_ws_in_turn / k_ws_alt; bench diagnosis plan.diag 8, plus
// an option of the low bits: alternate tiles with the exact rescale, k_ws_alt_bit, on the bf16
// split partials only).
int attention_decode_ws_sched(const attention_decode_plan& plan);

}  // namespace dsv4::cuda
