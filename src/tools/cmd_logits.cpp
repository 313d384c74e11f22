// dsv4 logits: run token ids through the model (one chunk, given chunks, or a prefill then
// one-token decode steps) and write the logits of every position to a safetensors file.
#include <cstdio>
#include <numeric>

#include "core/error.h"
#include "engine/model_runner.h"
#include "io/safetensors.h"
#include "tools/command.h"
#include "tools/id_list.h"
#include "tools/runner_flags.h"

namespace dsv4::tools {
namespace {

struct logits_options {
  std::string model;
  std::string ids;
  std::string chunks;
  int64_t decode_from = -1;
  std::string out;
  std::string device = "cpu";
  std::string activations = "auto";
  std::string kv_cache_dtype = "auto";
  std::string precision = "auto";
  bool cuda_graph = true;
};

int run_logits(const logits_options& o) {
  std::vector<int32_t> ids;
  for (int64_t v : parse_int_list(o.ids, "--ids")) {
    DSV4_CHECK(v >= 0 && v <= INT32_MAX, "--ids: {} is not a token id", v);
    ids.push_back(int32_t(v));
  }
  const int64_t n = int64_t(ids.size());
  std::vector<int64_t> chunks;
  if (!o.chunks.empty()) {
    DSV4_CHECK(o.decode_from < 0, "--chunks and --decode-from are exclusive");
    chunks = parse_int_list(o.chunks, "--chunks");
    for (int64_t c : chunks) DSV4_CHECK(c > 0, "--chunks: chunk sizes must be positive");
    DSV4_CHECK(std::accumulate(chunks.begin(), chunks.end(), int64_t(0)) == n,
               "--chunks: sizes sum to {} but --ids has {} tokens",
               std::accumulate(chunks.begin(), chunks.end(), int64_t(0)), n);
  } else if (o.decode_from >= 0) {
    DSV4_CHECK(o.decode_from >= 1 && o.decode_from <= n, "--decode-from {} must be in [1, {}]",
               o.decode_from, n);
    chunks.push_back(o.decode_from);
    for (int64_t i = o.decode_from; i < n; ++i) chunks.push_back(1);
  } else {
    chunks.push_back(n);
  }
  runner_options ro;
  ro.device = o.device;
  ro.cuda_graph = o.cuda_graph;
  if (o.activations != "auto") ro.activations = o.activations;
  ro.cache.kv_dtype = parse_kv_cache_dtype(o.kv_cache_dtype);
  if (o.precision != "auto") ro.precision = parse_precision_mode(o.precision);
  ro.cache.max_sequences = 1;
  ro.cache.max_context = std::max<int64_t>(n, 1);
  auto runner = model_runner::load(o.model, ro);
  if (const size_t bytes = backend_memory_bytes(runner->backend()))
    std::fprintf(stderr, "dsv4: %s: %.3f GiB of device memory after load\n", o.device.c_str(),
                 double(bytes) / double(1ull << 30));
  const int64_t vocab = runner->config().vocab_size;
  for (int32_t id : ids)
    DSV4_CHECK(id < vocab, "--ids: token id {} out of range [0, {})", id, vocab);
  const int seq = runner->add_sequence();
  tensor all = tensor::empty(dtype::f32, {n, vocab});
  int64_t done = 0;
  for (int64_t c : chunks) {
    sequence_chunk chunk{seq, std::vector<int32_t>(ids.begin() + done, ids.begin() + done + c),
                         true};
    tensor logits = runner->step({chunk});
    std::copy(logits.data<float>(), logits.data<float>() + c * vocab,
              all.data<float>() + done * vocab);
    done += c;
  }
  safetensors_writer writer;
  writer.add("logits", all.view());
  writer.write(o.out);
  return 0;
}

const command_registration registration(
    "logits", "Write the logits of every position for given token ids (safetensors)",
    [](CLI::App& sub) {
      auto o = std::make_shared<logits_options>();
      sub.add_option("--model", o->model, "Model directory")->required();
      sub.add_option("--ids", o->ids, "Comma-separated token ids")->required();
      sub.add_option("--chunks", o->chunks, "Feed the ids as chunks of these sizes");
      sub.add_option("--decode-from", o->decode_from,
                     "Prefill N tokens, then decode the rest one at a time");
      sub.add_option("--out", o->out, "Output safetensors file (tensor 'logits')")->required();
      sub.add_option("--device", o->device, "cpu");
      add_cuda_graph_option(sub, o->cuda_graph);
      add_activations_option(sub, o->activations);
      add_kv_cache_dtype_option(sub, o->kv_cache_dtype);
      sub.add_option("--precision", o->precision,
                     "auto (default: official for FP8 checkpoints on cuda, else exact), exact, or "
                     "official (FP8/FP4 activation, KV and indexer rounding of the reference)")
          ->check(CLI::IsMember({"auto", "exact", "official"}));
      return [o] { return run_logits(*o); };
    });

}  // namespace
}  // namespace dsv4::tools
