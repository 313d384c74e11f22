// The attention decode plans (host only; see attention_decode.h): split counts, tiles per CTA and
// the kernel options, from host-known shapes only (graph-capturable steps).
//
// Removed in session 13: the fused cluster plan (the splits of a (token, head group) as one
// thread block cluster of 1-16 CTAs merging their partial sums over distributed shared memory,
// no combine launch; session 7, opt-in since ATTN12). Its cluster merge took 8-10 us from the key
// loop's end to the CTAs' exit (every CTA moved its 128 KB of rows through shared memory). H100
// 2026-11-26 (ATTN12 helper, bench_attention --steps, same process), fused / split time: HCA 8K
// T=1 17.28 / 13.44 us, Flash CSA T=4 18.34 / 16.00, HCA 8K T=32 22.53 / 20.26; H200 2026-11-26
// (session 13 lead call 1, --steps): fused / split 1.08-1.43x at every small step (HCA 8K T=1
// 16.54 / 13.22 us, Pro CSA T=1 1.43x), equal at the large ones (both split).
#include <algorithm>
#include <cstdint>

#include "backends/cuda/attention_decode.h"

namespace dsv4::cuda {

namespace {

constexpr int64_t k_keys_per_tile = k_attention_decode_keys_per_tile;
constexpr int64_t k_heads_per_cta = k_attention_decode_heads_per_cta;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

attention_decode_plan attention_decode_make_plan(int64_t tokens, int64_t heads, int64_t head_dim,
                                                 int64_t window_capacity, int64_t comp_capacity,
                                                 int sm_count, int64_t min_tiles_per_split) {
  attention_decode_plan p;
  p.tokens = tokens;
  p.heads = heads;
  p.window_capacity = window_capacity;
  p.comp_capacity = comp_capacity;
  if (tokens <= 0 || heads <= 0 || head_dim != k_attention_decode_head_dim) return p;
  // 0: one key tile per split for single-token steps with up to 2048 slots, where the CTAs'
  // serial latency chain dominates (ATTN2 helper, H200: Flash CSA T=1 22.9 -> 20.8 us, HCA 128K
  // T=1 29.1 -> 27.2 us); otherwise 2 (more splits make the combine cost more).
  const bool engine_rule = min_tiles_per_split == 0;
  const int64_t groups = ceil_div(heads, k_heads_per_cta);
  const int64_t tiles =
      std::max<int64_t>(1, ceil_div(window_capacity + comp_capacity, k_keys_per_tile));
  // One tile per split while the step has at most 48 tiles of (token, head group) work in all,
  // else 2. H100 2026-11-26 (ATTN12 helper, bench_attention --steps, same process; the
  // warp-specialized alternate-tile kernel, partials in L2), splits x tiles: Flash CSA T=1 20x1
  // 14.08 us / 10x2 15.74, HCA 8K T=1 8x1 13.44 / 4x2 14.24, HCA 128K T=1 36x1 15.68 / 18x2 15.65;
  // Pro CSA T=1 (2 head groups, 72 tiles) 36x1 17.25 / 18x2 15.46.
  if (engine_rule) min_tiles_per_split = tokens * groups * tiles <= 48 ? 1 : 2;
  const int64_t thin =
      std::max<int64_t>(1, ceil_div(tiles, std::max<int64_t>(1, min_tiles_per_split)));
  // One CTA per SM fits: fill one wave (floor, so T * groups * splits <= SMs when T * groups is
  // below the SM count, never a second partial wave). More splits over two or three waves
  // (ATTN26 helper, H200 2026-11-27, bench_attention --steps "waves" rows, one process; that
  // binary had an L2 prefetch since removed, its plan rows 39.1-39.5 / 62.6-62.7 us): HCA 1M T=8
  // S16x17 -> S20x13 57.2 us, S24x11 53.0, S33x8 54.4; T=16 S8x33 -> S20x13 87.5, S24x11 83.6,
  // S33x8 100.9: each wave pays the prologue (~5 us to the first S) and the epilogue again.
  int64_t splits = std::clamp<int64_t>(std::max(sm_count, 1) / (tokens * groups), 1, thin);
  // Past 64 splits (T * groups <= 2, long contexts) the partial rows (2 KB per head and split,
  // written, then read by the combine) cost more than the extra CTAs gain: splits take twice the
  // minimum tiles. H100 2026-11-24, HCA 1M T=1 (260 tiles; warp-specialized kernel with the
  // S / P V overlap, a schedule since removed): 130 splits 42.4 us, 65 splits 32.5 us, 33
  // splits 38.5 us (bench_attention --cases).
  // With two (token, head group) rows of work (T = 2 at Flash heads, T = 1 at Pro heads) the
  // engine's splits take the TMA key tiles' minimum (one 3-D box per tile since session 32): H200
  // l32f (bench_attention --steps split rows, event-timed), 65 x 4 / 33 x 8 tiles: Flash HCA 1M
  // T=2 25.79-25.95 / 22.69-22.75 us, Pro HCA 1M T=1 25.47-25.50 / 22.56-22.59; one row (Flash
  // T=1) keeps 65 x 4 (20.03-20.06 / 22.08-22.18: half the SMs idle at 33 splits).
  if (splits > 64) {
    if (engine_rule && tokens * groups >= 2)
      splits = std::min(splits, ceil_div(tiles, k_attention_decode_key_tma_min_tiles));
    else
      splits = std::min(
          splits,
          std::max<int64_t>(1, ceil_div(tiles, 2 * std::max<int64_t>(1, min_tiles_per_split))));
  }
  // Past 32 splits, splits shorter than the TMA key tiles' minimum take that minimum where the
  // step still fills half the SMs with it (several rows of long-context work: Flash HCA 1M T=3,
  // 44 x 6 cp.async tiles -> 33 x 8 TMA ones). H200 l33b (bench_attention --steps split rows,
  // event-timed, two rounds): HCA 1M T=3 plan 44x6 28.42 us, 33x8 25.95, 26x10 26.21. One row
  // (Flash T=1, 65 x 4) and short contexts keep their splits (half the SMs idle / TMA not paying).
  // With bf16 partials (below) in one process (l33c, --steps): T=3 44 x 6 25.66 us, 33 x 8
  // 24.03-24.13.
  if (engine_rule && splits > 32 &&
      ceil_div(tiles, splits) < k_attention_decode_key_tma_min_tiles &&
      2 * tokens * groups * ceil_div(tiles, k_attention_decode_key_tma_min_tiles) >= sm_count)
    splits = ceil_div(tiles, k_attention_decode_key_tma_min_tiles);
  // Multi-token steps whose splits stay short: at most 8 splits (the row combine, one warp per
  // row, instead of the block combine) when that takes at most 6 tiles per split. H100 2026-11-26
  // (ATTN12 helper, same run as above), splits x tiles: Flash CSA T=4 10x2 16.96 us / 7x3 16.00,
  // T=8 10x2 19.01 / 7x3 17.25; HCA 128K T=8 12x3 22.14 / 9x4 21.22 / 6x6 21.02. HCA 1M T=8 (260
  // tiles) keeps 16 splits of 17.
  // Since session 33 only where the step has 8 rows of (token, head group) work or more, or the
  // cap adds at most one tile per split: with fewer rows the splits' extra tiles cost more than
  // the row combine saves. H200 l33e (bench_attention --steps split rows, event-timed, two
  // rounds; bf16 partials), capped plan / uncapped: HCA 128K T=2 8x5 18.18 / 18x2 15.07-15.10 us,
  // T=4 8x5 18.27-18.30 / 18x2 16.00-16.10, Pro CSA T=2 8x5 16.86-16.99 / 18x2 15.30-15.33,
  // Flash CSA T=2 7x3 14.46-14.50 / 20x1 13.82-13.86; kept: Flash CSA T=4 7x3 14.66-14.75 / 10x2
  // 15.49-15.55 (one tile more), T=8 7x3 15.10-15.20 / 10x2 16.42, HCA 128K T=8 8x5 18.66 / 12x3
  // 18.78-18.88 (8 rows). l33f (--kv-fp8-ab, b61922c / this rule, alternating): HCA 128K T=2
  // 17.98-18.24 -> 14.94-15.17 us, T=3 18.21-18.27 -> 15.36-15.52, T=4 18.30-18.50 ->
  // 15.97-16.16, Pro HCA 128K T=2 18.24-18.43 -> 15.68-15.87, Flash CSA T=2 14.46-14.62 ->
  // 13.86-14.05, Pro CSA T=2 16.90-16.99 -> 15.26-15.42; FP8 records 1.04-1.19x; Flash CSA T=4 /
  // T=8, HCA 128K T=8, Pro CSA T=4 unchanged.
  const int64_t capped_tiles = ceil_div(tiles, k_attention_decode_short_step_splits);
  if (engine_rule && tokens >= 2 && splits > k_attention_decode_short_step_splits &&
      capped_tiles <= 6 && (tokens * groups >= 8 || capped_tiles - ceil_div(tiles, splits) <= 1))
    splits = k_attention_decode_short_step_splits;
  const int64_t per_split = ceil_div(tiles, splits);
  splits = ceil_div(tiles, per_split);  // every split starts below the capacity
  p.splits = splits;
  p.keys_per_split = per_split * k_keys_per_tile;
  p.scratch_bytes = size_t(tokens * splits * heads) * (size_t(k_attention_decode_head_dim) * 4 + 8);
  p.wgmma = true;  // H200 2026-11-22: 1.02-1.18x faster than mma.sync at decode shapes
  // The warp-specialized kernel at every split (bf16 pools; f32 pools take the synchronous kernel
  // whatever this says). It was used from 4 tiles per split only (H100 2026-11-24: 0.91-0.99x the
  // synchronous kernel's time at 2-3 tiles per split); since its producer publishes by
  // cp.async.mbarrier.arrive.noinc it is faster at one tile too. H100 2026-11-26 (ATTN12 helper,
  // bench_attention --steps, same process), synchronous / warp-specialized time with the same
  // splits: Flash CSA T=1 20x1 19.20 / 14.08 us, HCA 128K T=1 36x1 21.12 / 15.68, HCA 8K T=1 8x1
  // 18.53 / 13.44, Flash CSA T=4 7x3 23.97 / 16.00, HCA 128K T=8 12x3 32.42 / 22.14, HCA 1M T=1
  // 65x4 31.20 / 21.09. (The per-CTA trace of Flash CSA T=1, 20x1: rows of the first tile in
  // shared memory 2.4 us after the CTA's entry, S 0.8 us, softmax and P V 0.7 us, the 128 KB of
  // partials 2.5 us, the combine from 1.1 us after the last CTA's end for 3 us.)
  p.producer = true;
  // Alternate tiles per consumer warpgroup (plan.alt; S summed over all 512 channels in one wgmma
  // chain, so not bit-equal to in-turn) wherever the warp-specialized kernel runs. H200
  // 2026-11-26 (bench_attention --cases / --small, same run), time with tiles two at a time (a
  // schedule bit-equal to in-turn and 1.03-1.07x faster than it, removed in session 11) / alt:
  // HCA 1M T=32 178.5 / 156.6 us (1.14x), Pro HCA 1M T=64 518.5 / 451.5 (1.15x), HCA 1M T=8
  // 60.0 / 54.0 (1.11x), Flash CSA T=32 42.2 / 40.0; one-tile splits within 1-8%. The S / P V
  // overlap (also removed) took 1.00-1.09x the in-turn time (H100 2026-11-24). The FP8-record
  // pools run alt too (the ws kernel dequantizes them, ATTN13); DSV4_ATTENTION_ALT=0 turns alt
  // off in the engine (the in-turn schedule), as one of the record-vs-bf16 bit-for-bit tests does.
  p.alt = true;
  // No combine launch where one split covers a (token, head group): its CTA writes the
  // normalized rows with the sink itself (plan.fold; the combine's output bit for bit). H200
  // 2026-11-26 (ATTN9 helper, bench_attention --cases --alt-rows, same process, two rounds),
  // combine / fold time: Pro HCA 1M T=64 428.8 / 413.1 and 428.6 / 409.4 us (H100: 402.7 /
  // 394.8, the kernel without a combine 394.5). A merge of 2-16 splits by the last CTA of a group
  // (a device-wide counter per group; same run: Pro CSA T=32, 2 splits, 56.9 / 52.9 us; but HCA
  // 1M T=32, 4 splits, 128.3 / 131.3; Flash CSA T=32, 4 splits, 34.7 / 36.2; HCA 1M T=8, 16
  // splits, 48.0 / 71.7) was removed in session 11. Re-measured on the bf16 partials (ATTN23,
  // H200 2026-11-27, bench_attention --steps, same process, graph replay alternating, bit-equal
  // to the row combine): the last CTA of a group reading the 2-4 splits' 64 KB rows back from L2
  // took 9-12 us (~21 GB/s per SM; the combine spreads the same bytes over every SM): plan /
  // merge Flash CSA T=32 (4 splits) 19.62 / 28.77 us, HCA 128K T=32 (4) 26.27 / 35.39, Pro CSA
  // T=32 (2) 34.30 / 40.35. Removed again.
  p.fold = splits == 1;
  // The row combine (one warp per (token, head) row, attention_decode_combine_rows; the block
  // combine's output bit for bit) up to 8 splits. H100 2026-11-26 (ATTN10 helper,
  // bench_attention --combine-rows, same process, second round), block / row combine time: HCA
  // 1M T=32 (4 splits) 127.1 / 121.8 us, Flash CSA T=32 (4) 38.0 / 32.8, Pro CSA T=32 (2) 60.1 /
  // 50.0, Pro HCA 1M T=32 (2) 218.5 / 208.3, HCA 128K T=32 (4) 43.4 / 38.6, HCA 1M T=16 (8) 74.8
  // / 73.1; but HCA 1M T=8 (16 splits, 512 rows: 4 warps per SM) 50.1 / 53.2: the block combine.
  // Since session 33 (the bf16 rows of every split loaded beside the (m, l),
  // attention_decode_combine_rows) also 9-16 splits where the block combine would take more than
  // one wave (rows > 4 CTAs per SM: its 122 registers). H200 l33j (bench_attention --kv-fp8-ab,
  // f6bf369 / rows to 16 splits everywhere, alternating): HCA 1M T=12 (11 splits, 768
  // rows) 43.97-44.22 / 41.06-41.54 us, but T=8 (16 splits, 512 rows) 32.22-32.51 / 34.53-34.66 and
  // Pro T=4 (16, 512) 31.07-31.46 / 33.60-33.79 (--combine-rows in one process, block /
  // rows: 31.46-31.58 / 33.82-33.92): with one wave the block combine's 16 warps per SM beat the
  // row combine's 4. This rule (l33k, f6bf369 / this): T=12 44.00-44.13 -> 41.18-41.25 us, T=8 and
  // Pro T=4 unchanged; the 8-split instance's one trip: Flash CSA T=4 14.53-14.59 -> 13.95-14.08,
  // T=8 15.14-15.20 -> 14.66-14.85, HCA 8K T=1 12.26-12.32 -> 11.94-12.06, HCA 128K T=8 18.50-18.53
  // -> 18.11-18.21, Pro CSA T=4 1.02x, HCA 1M T=16 / T=32 within noise; FP8 records T=12 1.05x.
  constexpr int64_t block_combine_ctas_per_sm = 4;
  p.combine_rows = splits <= k_attention_decode_short_step_splits ||
                   (splits <= k_attention_decode_max_combine_rows_splits &&
                    tokens * heads > block_combine_ctas_per_sm * std::max(sm_count, 1));
  // Partials kept in L2 for the combine (plan.partials_l2). H100 2026-11-26 (ATTN10 helper,
  // bench_attention --combine-rows, same process, second round; the kernel with no combine in
  // brackets), block / block + L2 / rows / rows + L2 time: HCA 1M T=32 127.6 / 121.4 / 121.2 /
  // 115.5 us (114.7), Flash CSA T=32 38.2 / 32.6 / 33.3 / 27.7, Pro HCA 1M T=32 217.1 / 210.8 /
  // 207.6 / 201.2 (201.7), Pro CSA T=32 59.4 / 54.1 / 49.9 / 44.5, HCA 128K T=32 43.3 / 37.6 /
  // 38.6 / 32.6, HCA 1M T=16 74.7 / 69.6 / 73.2 / 68.1; block / block + L2: HCA 1M T=8 50.2 / 44.5,
  // T=4 38.4 / 32.6, T=1 25.7 / 22.0.
  p.partials_l2 = true;
  // The combine triggers the step's next kernel first thing (plan.combine_trigger) with the row
  // combine, and with the block combine where its rows fit one CTA per SM. H200 l34f
  // (bench_attention --chain-early: a graph of an early-triggering query writer, the attention and
  // a programmatic reader of its output, minus writer and reader; best of 3, at exit / first
  // thing): HCA 1M T=1 (block, 64 rows) 15.65 / 15.36 us, HCA 128K T=2 (rows) 9.98 / 9.66, HCA
  // 128K T=32 (rows) 19.65 / 19.33, Flash CSA T=1 (block, 64 rows) 8.13 / 7.97, HCA 8K T=1 (rows)
  // 7.52 / 7.26, HCA 1M T=32 and Flash CSA T=32 (rows) within 0.05; but HCA 1M T=8 (block, 512
  // rows) 28.10 / 28.16 and Pro HCA 1M T=4 (block, 512 rows) 26.82 / 27.10 (the next kernel's
  // CTAs placed beside 4 combine CTAs per SM).
  p.combine_trigger = p.combine_rows || tokens * heads <= std::max(sm_count, 1);
  // bf16 partial rows (plan.partials_bf16) in the split plans of 2-64 splits (2-32 until session
  // 33). H200 2026-11-27
  // (ATTN19 helper, bench_attention --steps, same process, the f32 rows toggled in alternation;
  // event-timed, graph replay in brackets), f32 / bf16 partials: Flash CSA T=32 (4 splits) 24.80
  // / 20.67 us (19.42), HCA 128K T=32 (4) 29.76 / 25.66 (26.46), HCA 1M T=8 (16) 40.13 / 36.58
  // (36.54), HCA 1M T=32 (4) 104.06 / 100.51, Flash CSA T=1 (20) 14.27 / 13.41; FP8 records
  // (--kv-fp8) Flash CSA T=32 27.14 / 22.88, HCA 128K T=32 34.72 / 30.56, HCA 1M T=8 49.57 /
  // 45.95, HCA 128K T=1 (18) 17.12 / 16.61. The traces: the f32 rows' 16 MB at T = 32 took 4.3 us
  // from the key loop's end to the CTAs' end, the bf16 rows 2.1 (both ~3.9 TB/s into L2), and the
  // row combine 4.1 -> 2.6 us (with its first loads beside the (m, l)). HCA 1M T=1 (65 splits,
  // 4 MB of bf16 rows): 0.1-0.4 us slower in three rounds (bf16 / f32 20.51 / 20.22, 20.61 / 20.51,
  // 20.58 / 20.16 us), so f32 past 64 splits. Storing the bf16 pairs as they sit in the
  // accumulator (4 bytes per thread, half sectors) was slower than f32 (Flash CSA T=32 26.59 vs
  // 24.83 us). 33-64 splits took f32 rows until session 33 (128 KB per CTA over 33-132 CTAs).
  // H200 l33c (bench_attention --kv-fp8-ab, main 573ad56 / bf16 from 33 to 64 splits with two rows
  // or more and the TMA-length rule above, alternating, 2 rounds x 2 rows, event-timed), bf16
  // pools: Flash HCA 1M T=4 (33 splits) 28.13-28.35 / 25.34-25.50 us, T=3 28.45-28.64 / 24.16-24.26
  // (44 x 6 -> 33 x 8 as well), HCA 512K T=3 (44) 25.41-25.66 / 22.78-22.88, Pro HCA 1M T=2 (33)
  // 27.68-27.81 / 24.70-24.90, Pro T=1 22.59-22.82 / 22.50-22.59, Flash T=2 22.72-22.85 /
  // 22.56-22.72; FP8 records 1.10-1.14x at T=3 / T=4 / Pro T=2; in one process (--steps, f32 part
  // / plan): T=4 27.97 / 25.18, Pro T=2 27.81 / 24.45-24.64, T=3 25.98 / 24.03-24.13. One row
  // (l33d, e9f550c / bf16 for one row too): Flash HCA 128K T=1 (36 splits) 15.46-15.58 /
  // 14.98-15.01 us, 256K (34) 16.16-16.35 / 15.87, 512K (33) 18.37-18.62 / 18.11-18.18; FP8
  // records 1.02-1.04x; HCA 1M T=1 (65, f32), HCA 8K and CSA T=1 unchanged.
  p.partials_bf16 = splits > 1 && splits <= 64;
  // Tried and dropped on the bf16 rows (ATTN24 helper, H200 2026-11-27, bench_attention --steps,
  // one process, graph replays alternating, outputs bit-equal): the rows staged in the consumed
  // key ring (1040-byte rows, conflict-free) after a barrier of both consumer warpgroups, then
  // written as whole lines, by one cp.async.bulk of 512 bytes per row half, or by the warps'
  // STG.128 (512 contiguous bytes per warp store). Key loop's end -> CTA's end 3.26 (bulk) / 2.27
  // (lines) vs 1.95 us (fragment stores) at Flash CSA T=32; graph replay, fragment stores / bulk
  // / lines: Flash CSA T=8 15.20 / 16.10 / 15.52 us, Flash CSA T=32 20.96 / 22.24 / 21.18, HCA
  // 128K T=32 24.48 / 25.63 / 24.77, HCA 1M T=8 37.28 / 38.30 / 37.47. Whole lines do not store
  // faster than the 8-byte stores (8 MB over the grid in ~2 us either way).
  // Tried and dropped (ATTN12 helper, H100 2026-11-26, same process, per-CTA traces): the partial
  // rows out through the consumed key ring as whole lines (STG.128 of 512 bytes per warp, or one
  // TMA bulk copy per row) instead of the fragments' 8-byte stores: 3.1-3.2 vs 2.6 us from the
  // key loop's end to the CTA's end at Flash CSA T=1 (0.3-0.6 us slower at every step of <= 8
  // tokens, neutral at T=32); the block combine loading its first 16 splits' partials beside
  // their (max, sum): no faster (3.2 vs 3.1 us from its wait to its end); the first slot indices
  // and the query tile read before the set-up barrier: the rows of the first tile landed 0.3 us
  // later (the index loads queued behind the 64 KB query).
  // Launched as a programmatic dependent of the step's previous kernel (its CTAs are placed and
  // set up while that kernel ends). H100 2026-11-26 (ATTN12 helper, bench_attention --steps: a
  // graph of a kernel writing the query, then the attention; minus that kernel alone), without /
  // with: HCA 8K T=1 11.17 / 11.04 us, HCA 128K T=1 14.14 / 13.92, HCA 1M T=1 18.75 / 18.30, Pro
  // CSA T=1 13.98 / 13.82, HCA 8K T=32 16.42 / 16.16, Flash CSA T=4 14.08 / 13.82, HCA 1M T=8
  // 37.92 / 37.86; Flash CSA T=1 12.58 / 12.74 and HCA 1M T=32 100.77 / 100.83 the exceptions.
  p.pdl = true;
  return p;
}

int64_t attention_decode_chunk_tokens(int64_t tokens, int64_t heads, int64_t head_dim,
                                      int64_t window_capacity, int64_t comp_capacity, int sm_count,
                                      bool fold_kernel) {
  const int64_t step = k_attention_decode_step_chunk;
  if (tokens <= step || !fold_kernel) return std::min(tokens, step);
  // Prefill: one split per (token, head group) CTA, so each CTA runs every tile of its token
  // (its fixed cost, ~9 us of set-up, first rows, query tile and epilogue, is paid once per
  // token and head group), fold writes the output (no partials, no combine launch, no scratch),
  // and a launch covers many waves of CTAs, tokens in order (the CTAs of neighbouring tokens,
  // which share their window and compressed rows, run at the same time); every launch boundary
  // costs about one CTA's time (the last wave drains). H100 2026-11-26 (ATTN16 helper,
  // bench_attention --prefill; one sequence's T tokens ending at ctx, bf16; two calls, figures
  // of the second), 64-token chunks (Flash: 2 splits + combine; Pro: 1 split) / this rule: Flash
  // HCA 8K T=4096 1195 / 487 us (2.46x), Flash HCA 128K T=4096 2402 / 1684 (1.43x; 1625 in a
  // second process, 50.5% of dense BF16), Flash CSA top-512 T=4096 (candidates shared per 64
  // tokens) 1752 / 993 (1.76x), T=256 113 / 76, Flash HCA 8K T=100 35.9 / 23.2; Pro HCA 8K
  // T=4096 1464 / 937 (1.56x), Pro HCA 128K T=4096 3756 / 3405 (1.10x; 3741 / 3190-3369 in a
  // second process), Pro CSA top-1024 shared T=4096 3522 / 3251 (1.08x), T=1024 894 / 784, T=256
  // 225 / 212. Pro rows vary by up to ~8% with the row's place in the process (the GPU at its
  // 700 W limit, SM clock 1830-1980 MHz). 2 splits per CTA with the combine: Flash HCA 128K
  // T=4096 2205 us, Pro 4391.
  // The longest chunk: Flash HCA 128K T=16384 at chunks of 4096 / 8192 / 16384: 6490 / 6162 /
  // 6151 us; Flash CSA shared T=16384 3902 / 3859 / 3821; Pro CSA shared 1M T=16384 12244 /
  // 12237 / 14156.
  // Steps of at most two waves of CTAs whose 64-token chunks already run one split (Pro heads):
  // those chunks. One launch quantizes into whole waves of CTAs (Pro HCA 128K T=96, 192 CTAs on
  // 132 SMs: 112.7 us; 64 + 32 tokens, the second launch on 2 splits: 104.5 us). From 3.9
  // waves on (Pro T=256) one launch measured faster; between 2 and 3.9 waves it is not measured.
  const int64_t groups = ceil_div(heads, k_heads_per_cta);
  if (tokens * groups <= 2 * int64_t(sm_count) &&
      attention_decode_make_plan(step, heads, head_dim, window_capacity, comp_capacity, sm_count)
              .splits == 1)
    return step;
  const int64_t chunk = std::min(tokens, k_attention_decode_prefill_chunk);
  const attention_decode_plan p =
      attention_decode_make_plan(chunk, heads, head_dim, window_capacity, comp_capacity, sm_count);
  return p.splits == 1 ? chunk : step;
}

}  // namespace dsv4::cuda
