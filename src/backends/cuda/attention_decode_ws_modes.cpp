// The host's choice of the warp-specialized decode kernel's schedule and options
// (attention_decode_ws_modes.h).
#include "backends/cuda/attention_decode_ws_modes.h"

namespace dsv4::cuda {

int attention_decode_ws_opts(const attention_decode_plan& plan) {
  // (diag bit 3 picks the exact rescale, attention_decode_ws_sched.)
  const int d = plan.diag & 7;
  const int box2d = (plan.diag & 128) != 0 ? k_ws_opt_key_box2d : 0;
  const int early = plan.tables_early ? k_ws_opt_tables_early : 0;
  return box2d | early |
         (d == 1   ? k_ws_opt_no_load
          : d == 2 ? k_ws_opt_no_compute
          : d == 4 ? k_ws_opt_divisions
                   : 0);
}
int attention_decode_ws_sched(const attention_decode_plan& plan) {
  if (!plan.alt) return k_ws_in_turn;
  return (plan.diag & 8) != 0 ? k_ws_alt_bit : k_ws_alt;  // (diag 16: no TMA key tiles)
}

}  // namespace dsv4::cuda
