// The forward's plan/run split and fixed-width (padded) block tables: run() equals
// upload_plan() + compute() with step tensors kept across steps, bit for bit, and a plan whose
// compressed block tables are padded to the cache capacity gives the same logits as one sized to
// the step. Small cache blocks make decode cross many block boundaries.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>

#include "cache/kv_cache.h"
#include "core/error.h"
#include "engine/model_runner.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/fixture_model.h"
#include "model/forward.h"
#include "model/weights.h"

namespace dsv4 {
namespace {

using testing::fixture_dir;

struct loaded_model {
  model_config config;
  checkpoint ckpt;
  std::unique_ptr<ops> backend;
  model_weights weights;
};

std::unique_ptr<loaded_model> load(const std::string& dir) {
  auto m = std::make_unique<loaded_model>();
  m->config = load_model_config(dir + "/config.json");
  m->ckpt = checkpoint::open(dir);
  m->backend = make_backend("cpu");
  m->weights = load_model_weights(m->ckpt, m->config, *m->backend);
  return m;
}

bool same_bits(const tensor& a, const tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data<void>(), b.data<void>(), a.bytes()) == 0;
}

// Three sequences of different lengths: a ragged prefill step, then one-token decode steps of
// all unfinished sequences; the same schedule through (a) run() on unpadded plans and (b)
// upload_plan + compute on padded plans with one step_tensors per token count.
void check_split(const std::string& fixture, precision_mode precision) {
  const std::string dir = fixture_dir(fixture);
  if (!std::filesystem::exists(dir + "/config.json")) GTEST_SKIP() << "no fixture " << fixture;
  auto m = load(dir);
  cache_options co;
  co.max_sequences = 3;
  co.max_context = 96;
  co.block_size = 4;  // compressed entries cross a block every 4 (rate 4) or more tokens
  kv_cache cache_a(m->config, *m->backend, co), cache_b(m->config, *m->backend, co);
  model_forward fwd(m->config, m->weights, *m->backend, precision);

  std::mt19937 rng(11);
  const int64_t vocab = m->config.vocab_size;
  const size_t prompt[3] = {7, 1, 13}, total[3] = {80, 61, 96};
  std::vector<std::vector<int32_t>> ids(3);
  for (int s = 0; s < 3; ++s)
    for (size_t i = 0; i < total[s]; ++i) ids[s].push_back(int32_t(rng() % vocab));
  for (int s = 0; s < 3; ++s) {
    ASSERT_EQ(cache_a.add_sequence(), s);
    ASSERT_EQ(cache_b.add_sequence(), s);
  }

  std::map<int64_t, step_tensors> kept;  // per token count, as a graph runner keeps them
  std::vector<size_t> done(3, 0);
  int steps = 0;
  for (bool first = true;; first = false) {
    std::vector<sequence_chunk> chunks;
    for (int s = 0; s < 3; ++s) {
      if (done[s] >= total[s]) continue;
      const size_t n = first ? prompt[s] : 1;
      chunks.push_back(
          {s, std::vector<int32_t>(ids[s].begin() + done[s], ids[s].begin() + done[s] + n)});
      done[s] += n;
    }
    if (chunks.empty()) break;
    const step_plan pa = cache_a.plan(chunks);
    const step_plan pb = cache_b.plan(chunks, true);
    // The capacity: ceil((96 / rate) / 4) blocks of 4 entries (at least one column).
    for (const compressed_plan* cp : {&pb.csa, &pb.hca}) {
      if (cp->rate) {
        EXPECT_EQ(cp->block_table_width, std::max<int64_t>(1, (96 / cp->rate + 3) / 4));
      }
    }
    const tensor a = m->backend->download(fwd.run(pa, cache_a.layers()));
    step_tensors& st = kept[pb.tokens];
    const void* buffer = st.buffer.defined() ? st.buffer.data<void>() : nullptr;
    fwd.upload_plan(pb, st);
    if (buffer && !first) {
      EXPECT_EQ(st.buffer.data<void>(), buffer) << "decode plan buffer moved";
    }
    const tensor b = m->backend->download(fwd.compute(st, cache_b.layers()));
    ASSERT_TRUE(same_bits(a, b)) << fixture << " step " << steps;
    cache_a.commit(chunks);
    cache_b.commit(chunks);
    ++steps;
  }
  EXPECT_GT(steps, 80);
}

TEST(plan_split, run_equals_upload_plus_compute_padded_mixed_small) {
  check_split("mixed_small", precision_mode::exact);
}

TEST(plan_split, run_equals_upload_plus_compute_padded_official_format) {
  check_split("official_format", precision_mode::official);
}

TEST(plan_split, padded_block_table_width_is_the_capacity) {
  const std::string dir = fixture_dir("mixed_small");
  if (!std::filesystem::exists(dir + "/config.json")) GTEST_SKIP() << "no fixture";
  auto m = load(dir);
  cache_options co;
  co.max_sequences = 2;
  co.max_context = 100;
  co.block_size = 8;
  kv_cache cache(m->config, *m->backend, co);
  const int s = cache.add_sequence();
  const step_plan unpadded = cache.plan({{s, {1, 2, 3}}});
  const step_plan padded = cache.plan({{s, {1, 2, 3}}}, true);
  ASSERT_GT(padded.csa.rate, 0);
  EXPECT_EQ(unpadded.csa.block_table_width, 1);
  // ceil((100 / rate) / 8) blocks of 8 entries.
  const int64_t rate = padded.csa.rate;
  EXPECT_EQ(padded.csa.block_table_width, (100 / rate + 7) / 8);
  EXPECT_EQ(int64_t(padded.csa.block_table.size()), padded.csa.block_table_width);
  EXPECT_EQ(padded.csa.block_table[0], unpadded.csa.block_table[0]);
  for (size_t i = 1; i < padded.csa.block_table.size(); ++i)
    EXPECT_EQ(padded.csa.block_table[i], -1);
}

// The runner's decode path on a backend without graphs: no graph, same logits as with graphs
// off (both runners see the same schedule).
TEST(plan_split, runner_without_graph_backend_decodes_eagerly) {
  const std::string dir = fixture_dir("mixed_small");
  if (!std::filesystem::exists(dir + "/config.json")) GTEST_SKIP() << "no fixture";
  runner_options on, off;
  on.cache.max_context = off.cache.max_context = 64;
  off.cuda_graph = false;
  auto ra = model_runner::load(dir, on);
  auto rb = model_runner::load(dir, off);
  const int sa = ra->add_sequence(), sb = rb->add_sequence();
  for (int i = 0; i < 20; ++i) {
    const std::vector<int32_t> tok{int32_t((i * 37 + 5) % ra->config().vocab_size)};
    const tensor a = ra->step({{sa, tok}});
    const tensor b = rb->step({{sb, tok}});
    ASSERT_TRUE(same_bits(a, b)) << "step " << i;
  }
  EXPECT_EQ(ra->captured_graphs(), 0u);
}

// FP8 KV records: a clear error on a backend that cannot read them (the CPU), and the bytes per
// cached row of each storage kind.
TEST(plan_split, fp8_kv_cache_needs_a_record_backend) {
  const std::string dir = fixture_dir("mixed_small");
  if (!std::filesystem::exists(dir + "/config.json")) GTEST_SKIP() << "no fixture";
  runner_options o;
  o.cache.max_context = 64;
  o.cache.kv_dtype = parse_kv_cache_dtype("fp8");
  try {
    model_runner::load(dir, o);
    ADD_FAILURE() << "an fp8 cache on the cpu backend was accepted";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("FP8 KV records"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_kv_cache_dtype("auto"), kv_cache_dtype::activations);
  EXPECT_THROW(parse_kv_cache_dtype("bf8"), error);
  EXPECT_EQ(kv_cache_row_bytes(kv_cache_dtype::fp8, dtype::bf16, 512), 584);
  EXPECT_EQ(kv_cache_row_bytes(kv_cache_dtype::activations, dtype::bf16, 512), 1024);
  EXPECT_EQ(kv_cache_row_bytes(kv_cache_dtype::activations, dtype::f32, 512), 2048);
}

}  // namespace
}  // namespace dsv4
