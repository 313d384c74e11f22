#include "backends/cuda/moe_decode_tuning.h"

#include <algorithm>
#include <cmath>

#include "backends/cuda/device_info.h"

namespace dsv4::cuda::moe_decode_tuning {

// Row tiles per block (RT; 4 / RT warps split K). Old rule (min_blocks_per_sm > 0, set by
// moe_decode_set_rt_blocks_per_sm): the largest RT whose grid has that many blocks per SM for
// the chunk upper bound. Default (0): the RT of least modelled time
//   waves(RT) * (rounds per warp + k_block_overhead_rounds),
//   waves = ceil(expected chunks * row tiles / RT / resident blocks),
// with the expected chunk count of uniform routing, E * (1 - (1 - k / E)^T) (the distinct
// experts; chunks of 8 pairs rarely split at T <= 64), ties to the larger RT. The old rule at 4
// blocks per SM left T = 1 and 4 with 1.1-1.6 waves of long blocks (Flash W1/W3 at T = 1: 768
// blocks of 8 rounds per warp on 528 slots; Pro W1/W3: 576); measured on an H100 (MOE7 run 2,
// same run): Flash T = 1 48.1 -> 44.6 us, Pro T = 1 117.2 -> 101.2 us, Flash T = 4 146.6 ->
// 133.7 us, Pro T = 4 345.0 -> 323.5 us with the RTs this model picks; from T = 16 it picks 4,
// as the old rule did. The overhead constant (prologue of the ring, K-part reduction, launch
// of a block) is the one of 8..12 that reproduces every best-measured choice of that run.
// MOE15 (default; -99 = without it): where that choice is one wave, the RT of least work on the
// busiest SM,
//   ceil(expected blocks / SMs) * (rounds * RT + 4 * k_block_overhead_rounds)
// (a block's warp-rounds plus its overhead), ties to the larger RT. A one-wave grid never
// rebalances: its blocks run where they were placed, and with blocks / SMs not an integer the SMs
// holding one block more finish last (trace, Pro T = 1 W1/W3 at RT 4, 288 blocks on 132 SMs:
// loop ends 39-60 us on an H200, 40-76 us on an H100). Same run (H200, s13 MOE15 run 2, forced
// row tiles): Pro T = 1 W1/W3 RT 2 instead of 4 80.99 vs 87.90 us (1.085x; controls 0.997-0.999x),
// RT 1 0.990x; at Flash T = 1 RT 2 (unchanged) beat 4 and 1 by 1.04 / 1.14x; W2's RT 4 (unchanged)
// beat 2 at Flash and Pro T = 1. Of the model shapes (Flash, Pro; T = 1..64) only Pro T = 1's
// W1/W3 changes (multi-wave grids keep MOE7's choice).
// Ties of the wave model (session 37, l37e, H200, every replay after 80 ms of idle so that all ran
// at the full SM clock; pass-to-pass spread <= 0.4%): of the model shapes at T = 1..64 only Pro
// T = 1's W2 ties (672 blocks at RT 4, 1344 at RT 2: 2 x (24 + 12) = 3 x (12 + 12) rounds), and
// there RT 2 beat the tie's RT 4 by 1.016 / 1.019x in two passes (W1/W3 at the model's RT 2; 74.8 /
// 74.7 against 76.1 / 76.2 us a call; session 31's l31g 1.021x, back to back). On the devices of
// the H200's class (device_info.h bandwidth_rich) ties go to the smaller RT; elsewhere to the
// larger, as MOE7 fitted them on an H100 (not measured there since).
// W1/W3 with 4 scale slots at T = 2..4 (session 39's default on the H200 class) takes RT 4, as
// measured (l39f, H200, full clock, forced row tiles with 4 slots): RT 2 ran 0.950-0.975x of RT 4
// at Flash T = 3 / 4 and Pro T = 2 / 3 / 4 (MXFP4 and NVFP4), where the wave model, fed the real
// occupancy, takes RT 2 at Flash T = 3 / 4 and Pro T = 2 / 4; at Flash T = 2 it takes RT 4 (RT 2
// 1.002-1.018x there). Only where measured (the A/B setting of 4 slots from some T reaches larger
// T too); A/B codes and the old rule still decide when set. Session 47 (l47e, H200, full clock,
// two passes, main 461f242's kernels): W1/W3 forced to RT 2 ran Flash MXFP4 T = 2 / 3 / 4 1.030 /
// 1.034x, 1.003 / 1.006x, 0.992 / 0.993x of the RT 4 rule (block traces in its logs): at Flash
// T = 2 the RT 4 grid (at most 13 chunks x 32 blocks = 416) is under one wave of the 528 resident
// slots, so RT 4 leaves SMs with fewer blocks than they hold; RT 2 fills them. Hence, on the H200
// class, RT 2 where the RT 4 grid fits one wave (Flash T = 2; Pro T = 2 has 624 blocks, where l39f
// measured RT 2 at 0.95-0.975x).
// W2P at T = 1 on the H200 class (session 40's default, moe_decode_w2_pair) takes RT 2, as
// measured against the model's RT 4 with W2P off (l38c 1.006-1.009x, l39a 1.012-1.024x, l39d
// 1.007-1.017x; W2P at the model's row tiles 0.955-0.965x).
// MXFP4 W1/W3 at T = 1 on the H200 class where the RT 2 grid is more than one wave of resident
// blocks but at most 1.25 takes RT 1 (session 43): its few second-wave blocks otherwise run as a
// long tail on the SMs that got them (trace, l43a: Pro MXFP4 at RT 2, 576 blocks on 528 slots, 4
// blocks per SM with the 4 scale slots; the 84 SMs with 4 blocks ended their loops at 35-39 us, the
// 48 with 5 at 51-54 us). RT 1 halves the blocks and the tail. Measured on H200s: forced row tiles
// (l43d, two passes) Pro T = 1 MXFP4 W1/W3 RT 1 1.053 / 1.058x over RT 2 (W2 at RT 2 either way),
// NVFP4 0.985 / 0.985x; the rule for both formats against s-22 (l43e, two passes) MXFP4 1.053 /
// 1.055x, NVFP4 0.978 / 0.979x (its grid has the same 4 blocks per SM: the format, not the wave
// count, separates them; not explained), hence MXFP4 only. MOE15 (s13) measured RT 1 0.990x at Pro
// T = 1 when W1/W3 held 3 blocks per SM. Flash T = 1's W1/W3 grid is one wave (384 blocks),
// unchanged.
constexpr int k_block_overhead_rounds = 12;

int pick_rt(bool up, int64_t rows, int64_t rounds, int64_t tokens, int64_t top_k, int64_t experts,
            int64_t chunks_bound, int sms, const int (&blocks_per_sm)[3], int min_blocks_per_sm,
            double read_bytes_per_sm_cycle, bool four_scale_slots, bool w2_pair, bool mxfp4) {
  const bool ties_to_smaller = bandwidth_rich(read_bytes_per_sm_cycle);
  // The chunk bound's grid at RT, and the blocks resident at once at RT (blocks_per_sm's order).
  const auto grid_blocks = [&](int rt) { return (rows / (16 * rt)) * chunks_bound; };
  const auto resident = [&](int rt) {
    return int64_t(std::max(1, blocks_per_sm[rt == 4 ? 0 : rt == 2 ? 1 : 2])) * sms;
  };
  if (up && four_scale_slots && min_blocks_per_sm == 0 && tokens >= 2 && tokens <= 4)
    return ties_to_smaller && grid_blocks(4) <= resident(4) ? 2 : 4;
  if (!up && w2_pair && min_blocks_per_sm == 0 && tokens == 1 && ties_to_smaller) return 2;
  if (up && mxfp4 && min_blocks_per_sm == 0 && tokens == 1 && ties_to_smaller) {
    // W1/W3 at T = 1 whose RT 2 grid is a short second wave: RT 1 (see above, session 43).
    const int64_t blocks_rt2 = grid_blocks(2), slots_rt2 = resident(2);
    if (blocks_rt2 > slots_rt2 && 4 * blocks_rt2 <= 5 * slots_rt2) return 1;
  }
  // A/B codes (MOE15, moe_decode_set_rt_blocks_per_sm(-(10 u + d))): RT u for W1/W3 and d for
  // W2 where it is 1, 2 or 4, else the model below; -99: the model without the one-wave balance.
  bool balance = true;
  if (min_blocks_per_sm < 0) {
    const int f = up ? (-min_blocks_per_sm / 10) % 10 : -min_blocks_per_sm % 10;
    if (min_blocks_per_sm == -99)
      balance = false;
    else if (f == 1 || f == 2 || f == 4)
      return f;
    min_blocks_per_sm = 0;
  }
  if (min_blocks_per_sm > 0) {
    for (int rt : {4, 2})
      if ((rows / (16 * rt)) * chunks_bound >= min_blocks_per_sm * int64_t(sms)) return rt;
    return 1;
  }
  const double e = double(experts), pk = std::min(1.0, double(top_k) / e);
  const double chunks =
      std::clamp(e * (1.0 - std::pow(1.0 - pk, double(tokens))), 1.0, double(chunks_bound));
  int best = 4;
  double best_cost = 0, best_waves = 0;
  for (int i = 0; i < 3; ++i) {
    const int rt = 4 >> i;
    const double slots = double(std::max(1, blocks_per_sm[i])) * sms;
    const double waves = std::ceil(double(rows / (16 * rt)) * chunks / slots - 1e-9);
    const double cost = waves * (double(rounds) * rt / 4.0 + k_block_overhead_rounds);
    if (i == 0 || cost < best_cost || (ties_to_smaller && cost == best_cost))
      best = rt, best_cost = cost, best_waves = waves;
  }
  if (!balance || best_waves > 1) return best;
  for (int i = 0; i < 3; ++i) {
    const int rt = 4 >> i;
    const double per_sm = std::ceil(double(rows / (16 * rt)) * chunks / sms - 1e-9);
    const double cost = per_sm * (double(rounds) * rt + 4.0 * k_block_overhead_rounds);
    if (i == 0 || cost < best_cost) best = rt, best_cost = cost;
  }
  return best;
}

// Session 42 (l42a / l42b, H200): Pro T = 1's W1/W3 (576 blocks at RT 2 on 396 slots; 3 -> 4 blocks
// per SM with the K parts' partial sums in the ring) 1.046-1.058x; a one-wave grid gains no
// resident block that matters (Flash T = 1: 384 blocks on 396 slots; forced there 0.92-0.99x).
bool up_four_slots_at_one_token(int blocks_8, int blocks_4, int64_t grid_blocks, int sms,
                                double read_bytes_per_sm_cycle) {
  return bandwidth_rich(read_bytes_per_sm_cycle) && blocks_4 > blocks_8 &&
         grid_blocks > int64_t(std::max(blocks_8, 1)) * sms;
}

}  // namespace dsv4::cuda::moe_decode_tuning
