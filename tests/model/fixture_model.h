// Oracle fixtures written by scripts/make_fixtures.py (transformers' DeepseekV4ForCausalLM):
// tests/fixtures/models/<case>/ holds the checkpoint and expected.safetensors (ids, chunks,
// decode_from, logits_prefill / logits_chunked / logits_decode [n, vocab], metadata
// "tolerance" = exact | long).
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/safetensors.h"

namespace dsv4::testing {

inline std::vector<std::string> fixture_cases() {
  namespace fs = std::filesystem;
  std::vector<std::string> cases;
  const fs::path root = fs::path(DSV4_TEST_DATA_DIR) / "models";
  if (!fs::is_directory(root)) return cases;
  for (const auto& e : fs::directory_iterator(root))
    if (fs::exists(e.path() / "expected.safetensors")) cases.push_back(e.path().filename());
  std::sort(cases.begin(), cases.end());
  return cases;
}

inline std::string fixture_dir(const std::string& name) {
  return (std::filesystem::path(DSV4_TEST_DATA_DIR) / "models" / name).string();
}

struct expected_logits {
  std::vector<int32_t> ids;
  std::vector<int64_t> chunks;
  int64_t decode_from = 0;
  tensor prefill, chunked, decode;  // f32 [n, vocab]
  std::string tolerance;
};

inline std::vector<int64_t> read_i64(const safetensors_file& f, const char* name) {
  const safetensors_entry* e = f.find(name);
  if (!e) return {};
  const tensor_view v = f.view(*e);
  return std::vector<int64_t>(v.ptr<const int64_t>(), v.ptr<const int64_t>() + v.numel());
}

inline expected_logits load_expected(const std::string& dir) {
  auto f = safetensors_file::open(dir + "/expected.safetensors");
  expected_logits x;
  for (int64_t v : read_i64(*f, "ids")) x.ids.push_back(int32_t(v));
  x.chunks = read_i64(*f, "chunks");
  const auto d = read_i64(*f, "decode_from");
  x.decode_from = d.empty() ? 0 : d[0];
  auto get = [&](const char* name) {
    const safetensors_entry* e = f->find(name);
    return e ? tensor::to_f32(f->view(*e)) : tensor();
  };
  x.prefill = get("logits_prefill");
  x.chunked = get("logits_chunked");
  x.decode = get("logits_decode");
  auto it = f->metadata().find("tolerance");
  x.tolerance = it == f->metadata().end() ? "exact" : it->second;
  return x;
}

// Agreement figures between reference and actual logits [n, vocab].
struct logit_agreement {
  double max_abs_diff = 0;
  double median_row_max_diff = 0;
  double mean_kl = 0;  // mean over positions of KL(softmax(ref) || softmax(actual))
  double argmax_agreement = 0;
};

inline logit_agreement compare_logits(const tensor& ref, const tensor& got) {
  const int64_t n = ref.size(0);
  const int64_t v = ref.size(1);
  logit_agreement a;
  std::vector<double> row_max(n);
  int64_t agree = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* r = ref.data<float>() + i * v;
    const float* g = got.data<float>() + i * v;
    double rm = -INFINITY, gm = -INFINITY, mx = 0;
    int64_t ra = 0, ga = 0;
    for (int64_t j = 0; j < v; ++j) {
      mx = std::max(mx, std::fabs(double(r[j]) - double(g[j])));
      if (std::isnan(g[j])) mx = INFINITY;
      if (r[j] > rm) rm = r[j], ra = j;
      if (g[j] > gm) gm = g[j], ga = j;
    }
    row_max[i] = mx;
    a.max_abs_diff = std::max(a.max_abs_diff, mx);
    agree += ra == ga;
    double rs = 0, gs = 0;
    for (int64_t j = 0; j < v; ++j) {
      rs += std::exp(double(r[j]) - rm);
      gs += std::exp(double(g[j]) - gm);
    }
    double kl = 0;
    for (int64_t j = 0; j < v; ++j) {
      const double lp = double(r[j]) - rm - std::log(rs);
      const double lq = double(g[j]) - gm - std::log(gs);
      kl += std::exp(lp) * (lp - lq);
    }
    a.mean_kl += kl / double(n);
  }
  std::sort(row_max.begin(), row_max.end());
  a.median_row_max_diff = row_max[n / 2];
  a.argmax_agreement = double(agree) / double(n);
  return a;
}

}  // namespace dsv4::testing
