// Sequences batched into one step must not see each other: interleaving three sequences with
// ragged chunks gives each one the logits it gets alone, and the oracle's logits for the fixture
// prompt.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "engine/model_runner.h"
#include "model/fixture_model.h"

namespace dsv4 {
namespace {

using testing::fixture_cases;
using testing::fixture_dir;
using testing::load_expected;

std::string first_exact_case() {
  for (const auto& c : fixture_cases())
    if (load_expected(fixture_dir(c)).tolerance == "exact") return c;
  return {};
}

TEST(batching, interleaved_sequences_match_solo_runs_and_oracle) {
  const std::string name = first_exact_case();
  if (name.empty()) GTEST_SKIP() << "no exact fixture";
  const auto x = load_expected(fixture_dir(name));
  runner_options o;
  o.cache.max_sequences = 3;
  o.cache.max_context = int64_t(x.ids.size()) + 64;
  auto runner = model_runner::load(fixture_dir(name), o);
  const int64_t vocab = runner->config().vocab_size;

  std::mt19937 rng(7);
  std::vector<std::vector<int32_t>> prompts(3);
  prompts[0] = x.ids;
  for (int s = 1; s < 3; ++s)
    for (int i = 0; i < 37 + 11 * s; ++i) prompts[s].push_back(int32_t(rng() % vocab));

  // Solo references from the same engine.
  std::vector<std::vector<float>> solo(3);
  for (int s = 0; s < 3; ++s) {
    const int seq = runner->add_sequence();
    tensor l = runner->step({sequence_chunk{seq, prompts[s], true}});
    solo[s].assign(l.data<float>(), l.data<float>() + l.numel());
    runner->release_sequence(seq);
  }

  // Interleaved: each step takes a ragged slice of every unfinished sequence.
  std::vector<int> seqs;
  for (int s = 0; s < 3; ++s) seqs.push_back(runner->add_sequence());
  std::vector<size_t> done(3, 0);
  std::vector<std::vector<float>> got(3);
  const size_t sizes[] = {1, 5, 2, 13, 1, 9, 4};
  for (int step = 0;
       done[0] < prompts[0].size() || done[1] < prompts[1].size() || done[2] < prompts[2].size();
       ++step) {
    std::vector<sequence_chunk> chunks;
    std::vector<int> owners;
    for (int s = 0; s < 3; ++s) {
      if (done[s] >= prompts[s].size()) continue;
      const size_t n = std::min(sizes[(step + 2 * s) % 7], prompts[s].size() - done[s]);
      chunks.push_back(
          {seqs[s],
           std::vector<int32_t>(prompts[s].begin() + done[s], prompts[s].begin() + done[s] + n),
           true});
      owners.push_back(s);
      done[s] += n;
    }
    // Put the chunks in a varying order too.
    if (step % 2) {
      std::reverse(chunks.begin(), chunks.end());
      std::reverse(owners.begin(), owners.end());
    }
    tensor l = runner->step(chunks);
    int64_t row = 0;
    for (size_t c = 0; c < chunks.size(); ++c) {
      const int64_t n = int64_t(chunks[c].ids.size());
      got[owners[c]].insert(got[owners[c]].end(), l.data<float>() + row * vocab,
                            l.data<float>() + (row + n) * vocab);
      row += n;
    }
  }
  for (int s = 0; s < 3; ++s) {
    ASSERT_EQ(got[s].size(), solo[s].size());
    double mx = 0;
    for (size_t i = 0; i < got[s].size(); ++i)
      mx = std::max(mx, std::fabs(double(got[s][i]) - double(solo[s][i])));
    EXPECT_LE(mx, 1e-5) << "sequence " << s;
  }
  double mx = 0;
  for (int64_t i = 0; i < x.prefill.numel(); ++i)
    mx = std::max(mx, std::fabs(double(got[0][i]) - double(x.prefill.data<float>()[i])));
  EXPECT_LE(mx, 2e-3);
}

TEST(batching, rejects_bad_steps) {
  const std::string name = first_exact_case();
  if (name.empty()) GTEST_SKIP() << "no exact fixture";
  runner_options o;
  o.cache.max_sequences = 1;
  o.cache.max_context = 8;
  auto runner = model_runner::load(fixture_dir(name), o);
  const int seq = runner->add_sequence();
  const int32_t vocab = int32_t(runner->config().vocab_size);
  EXPECT_THROW(runner->step({sequence_chunk{seq, {vocab}, true}}), dsv4::error);
  EXPECT_THROW(runner->step({sequence_chunk{seq, {-1}, true}}), dsv4::error);
  EXPECT_THROW(runner->step({sequence_chunk{seq, {}, true}}), dsv4::error);
  EXPECT_THROW(runner->step({}), dsv4::error);
  EXPECT_THROW(runner->step({sequence_chunk{seq + 1, {1}, true}}), dsv4::error);
  EXPECT_THROW(runner->step({sequence_chunk{seq, std::vector<int32_t>(9, 1), true}}), dsv4::error);
  EXPECT_THROW(runner->add_sequence(), dsv4::error);
  // A rejected step leaves the sequence usable.
  EXPECT_EQ(runner->step({sequence_chunk{seq, {1, 2}, true}}).size(0), 2);
  EXPECT_EQ(runner->cache().length(seq), 2);
}

}  // namespace
}  // namespace dsv4
