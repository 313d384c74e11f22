// The host's choice of the warp-specialized decode kernel's schedule and options
// (attention_decode_ws_modes.h).
#include "backends/cuda/attention_decode_ws_modes.h"

namespace dsv4::cuda {

int attention_decode_ws_opts(const attention_decode_plan& plan) {
  // (diag bits 3-5 pick the alternate-tile variants, attention_decode_ws_sched.)
  const int d = plan.diag & 7;
  return d == 1 ? k_ws_opt_no_load : d == 2 ? k_ws_opt_no_compute : d == 4 ? k_ws_opt_divisions : 0;
}
int attention_decode_ws_sched(const attention_decode_plan& plan) {
  if (!plan.alt) return k_ws_in_turn;
  const int v = plan.diag & ~7;
  return v == 8    ? k_ws_alt_bit
         : v == 16 ? k_ws_alt_bit | k_ws_early_bit
         : v == 32 ? k_ws_alt_bit | k_ws_lazy_bit | k_ws_early_bit
                   : k_ws_alt;
}

}  // namespace dsv4::cuda
