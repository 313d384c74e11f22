// The host's choice of the warp-specialized decode kernel's schedule and options
// (attention_decode_ws_modes.h).
#include "backends/cuda/attention_decode_ws_modes.h"

namespace dsv4::cuda {

int attention_decode_ws_opts(const attention_decode_plan& plan) {
  return plan.diag == 1   ? k_ws_opt_no_load
         : plan.diag == 2 ? k_ws_opt_no_compute
         : plan.diag == 4 ? k_ws_opt_divisions
                          : 0;
}
int attention_decode_ws_sched(const attention_decode_plan& plan) {
  return plan.alt ? k_ws_alt : k_ws_in_turn;
}

}  // namespace dsv4::cuda
