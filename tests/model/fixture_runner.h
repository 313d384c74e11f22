// Runs a fixture's ids through a model_runner in given chunk sizes (shared by the CPU parity
// tests and the GPU model test).
#pragma once

#include <vector>

#include "core/tensor.h"
#include "engine/model_runner.h"

namespace dsv4::testing {

// Feeds `ids` in the given chunk sizes to a fresh sequence; returns logits of every position.
inline tensor run_chunks(model_runner& runner, const std::vector<int32_t>& ids,
                         const std::vector<int64_t>& chunks) {
  const int64_t vocab = runner.config().vocab_size;
  const int seq = runner.add_sequence();
  tensor all = tensor::empty(dtype::f32, {int64_t(ids.size()), vocab});
  int64_t done = 0;
  for (int64_t c : chunks) {
    tensor l = runner.step({sequence_chunk{
        seq, std::vector<int32_t>(ids.begin() + done, ids.begin() + done + c), true}});
    std::copy(l.data<float>(), l.data<float>() + c * vocab, all.data<float>() + done * vocab);
    done += c;
  }
  runner.release_sequence(seq);
  return all;
}

}  // namespace dsv4::testing
