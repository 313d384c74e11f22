// dsv4 generate: sample a continuation of a prompt given as token ids (prints ids) or as text
// (encoded with the model folder's tokenizer.json; the continuation streams out as text).
#include <cstdio>
#include <filesystem>
#include <optional>

#include "core/error.h"
#include "engine/model_runner.h"
#include "engine/sampler.h"
#include "text/stream_decoder.h"
#include "text/tokenizer.h"
#include "tools/command.h"
#include "tools/id_list.h"
#include "tools/runner_flags.h"
#include "tools/sampling_options.h"

namespace dsv4::tools {
namespace {

struct generate_options {
  std::string model;
  std::string prompt_ids;
  std::optional<std::string> prompt_text;
  int64_t tokens = 16;
  sampling_params sampling;
  bool ignore_eos = false;
  std::string device = "cpu";
  std::string activations = "auto";
  std::string kv_cache_dtype = "auto";
  std::string precision = "auto";
  bool cuda_graph = true;
};

int run_generate(const generate_options& o) {
  sampler::validate(o.sampling);
  DSV4_CHECK(o.tokens >= 0, "-n must be >= 0, got {}", o.tokens);
  DSV4_CHECK(o.prompt_text.has_value() != !o.prompt_ids.empty(),
             "give exactly one of --prompt and --prompt-ids");
  std::vector<int32_t> prompt;
  std::optional<text::tokenizer> tok;
  if (o.prompt_text) {
    const auto path = std::filesystem::path(o.model) / "tokenizer.json";
    DSV4_CHECK(std::filesystem::exists(path), "--prompt needs {} (or use --prompt-ids)",
               path.string());
    tok = text::tokenizer::load(path);
    prompt = tok->encode(*o.prompt_text);
    DSV4_CHECK(!prompt.empty(), "--prompt: empty prompt");
  } else {
    for (int64_t v : parse_int_list(o.prompt_ids, "--prompt-ids")) {
      DSV4_CHECK(v >= 0 && v <= INT32_MAX, "--prompt-ids: {} is not a token id", v);
      prompt.push_back(int32_t(v));
    }
  }
  runner_options ro;
  ro.device = o.device;
  ro.cuda_graph = o.cuda_graph;
  if (o.activations != "auto") ro.activations = o.activations;
  ro.cache.kv_dtype = parse_kv_cache_dtype(o.kv_cache_dtype);
  if (o.precision != "auto") ro.precision = parse_precision_mode(o.precision);
  ro.cache.max_sequences = 1;
  ro.cache.max_context = int64_t(prompt.size()) + o.tokens;
  auto runner = model_runner::load(o.model, ro);
  if (const size_t bytes = backend_memory_bytes(runner->backend()))
    std::fprintf(stderr, "dsv4: %s: %.3f GiB of device memory after load\n", o.device.c_str(),
                 double(bytes) / double(1ull << 30));
  const model_config& cfg = runner->config();
  for (int32_t id : prompt)
    DSV4_CHECK(id < cfg.vocab_size, "prompt token id {} out of range [0, {})", id, cfg.vocab_size);
  const int seq = runner->add_sequence();
  sampler s(o.sampling);
  std::optional<text::stream_decoder> decoder;
  if (tok) decoder.emplace(*tok, /*skip_special_tokens=*/true);
  std::vector<int32_t> next = prompt;
  std::string ids_out;
  for (int64_t i = 0; i < o.tokens; ++i) {
    tensor logits = runner->step({sequence_chunk{seq, next, false}});
    const int32_t id = s.sample(logits.data<float>(), cfg.vocab_size);
    if (!o.ignore_eos && id == cfg.eos_token_id) break;
    if (decoder) {
      // A sampled id the tokenizer does not know (random tiny models) is shown, not fatal.
      const std::string piece =
          tok->contains(id) ? decoder->push(id) : "<id " + std::to_string(id) + ">";
      std::fputs(piece.c_str(), stdout);
      std::fflush(stdout);
    } else {
      ids_out += (ids_out.empty() ? "" : ",") + std::to_string(id);
    }
    next = {id};
  }
  if (decoder)
    std::printf("%s\n", decoder->flush().c_str());
  else
    std::printf("%s\n", ids_out.c_str());
  return 0;
}

const command_registration registration(
    "generate", "Generate a continuation of a prompt (token ids or text)", [](CLI::App& sub) {
      auto o = std::make_shared<generate_options>();
      sub.add_option("--model", o->model, "Model directory")->required();
      sub.add_option("--prompt-ids", o->prompt_ids, "Comma-separated prompt token ids");
      sub.add_option("--prompt", o->prompt_text,
                     "Prompt text, encoded with the model folder's tokenizer.json");
      sub.add_option("-n,--max-tokens", o->tokens, "Tokens to generate");
      add_sampling_options(sub, o->sampling);
      sub.add_flag("--ignore-eos", o->ignore_eos, "Do not stop at the end-of-sequence token");
      sub.add_option("--device", o->device, "cpu");
      add_cuda_graph_option(sub, o->cuda_graph);
      add_activations_option(sub, o->activations);
      add_kv_cache_dtype_option(sub, o->kv_cache_dtype);
      sub.add_option("--precision", o->precision,
                     "auto (default: official for FP8 checkpoints on cuda, else exact), exact, or "
                     "official (FP8/FP4 activation, KV and indexer rounding of the reference)")
          ->check(CLI::IsMember({"auto", "exact", "official"}));
      return [o] { return run_generate(*o); };
    });

}  // namespace
}  // namespace dsv4::tools
