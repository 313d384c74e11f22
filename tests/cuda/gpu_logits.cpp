// gpu_logits MODEL_DIR IDS_FILE OUT_FILE [cpu|cuda] [exact|official] [bf16|f32]: runs the
// comma-separated token ids of IDS_FILE through the model in one prefill step and writes the
// logits of every position as the F32 tensor `logits` [tokens, vocab] to OUT_FILE (safetensors).
// Built with the standalone GPU tests (no CLI11 there); used by scripts/gpu_real_dims_parity.py.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/model_runner.h"
#include "io/safetensors.h"

int main(int argc, char** argv) {
  using namespace dsv4;
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: gpu_logits MODEL_DIR IDS_FILE OUT_FILE [cpu|cuda] [exact|official] "
                 "[bf16|f32]\n");
    return 2;
  }
  try {
    std::ifstream in(argv[2]);
    std::stringstream text;
    text << in.rdbuf();
    std::vector<int32_t> ids;
    std::string item;
    while (std::getline(text, item, ',')) ids.push_back(int32_t(std::stol(item)));
    runner_options o;
    o.device = argc > 4 ? argv[4] : "cuda";
    o.precision = parse_precision_mode(argc > 5 ? argv[5] : "exact");
    if (argc > 6) o.activations = argv[6];  // unset: the device's default (bf16 on cuda)
    o.cache.max_sequences = 1;
    o.cache.max_context = int64_t(ids.size());
    auto runner = model_runner::load(argv[1], o);
    std::fprintf(stderr, "gpu_logits: %zu tokens, device memory %.2f GiB\n", ids.size(),
                 double(backend_memory_bytes(runner->backend())) / double(1ull << 30));
    const int seq = runner->add_sequence();
    const tensor logits = runner->step({sequence_chunk{seq, ids, true}});
    safetensors_writer w;
    w.add("logits", logits.view());
    w.write(argv[3]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_logits: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
