// test_backend_ops: every CUDA kernel against the CPU reference (dsv4::cpu::cpu_ops), in the
// manner of llama.cpp's test-backend-ops. Not a ctest test (CI has no GPU); run on the GPU
// machine through scripts/gpu_session.sh.
//
//   test_backend_ops [--filter OPS] [--exclude OPS] [--per-op N] [--seed N]
//   test_backend_ops --list   (op names and case counts, no device needed)
//                                   parity: one line per case, exit 1 on any FAIL; --per-op keeps
//                                   the first N cases of each op (compute-sanitizer runs)
//   test_backend_ops --perf [--perf-runs N] [--filter OPS] [--exclude OPS]
//                                   timing: median of N (100) runs per case, GB/s against a
//                                   device-to-device copy measured in the same run; the
//                                   event-timed median includes the host's launch latency, so
//                                   for kernels of a few microseconds run it under
//                                   `ncu --metrics gpu__time_duration.sum` with a small N and
//                                   scripts/ncu_launch_medians.py
// OPS: comma-separated op names (the first column of the output); --filter keeps only those,
// --exclude drops those (the GPU session splits the ~9-minute parity run into two calls).
//
// Each parity case draws fresh random inputs (never zeros), runs the CPU op and the kernel on the
// same values and compares them by NMSE = sum((gpu - cpu)^2) / sum(cpu^2) against a tolerance
// chosen per op (see the k_tol_* constants). Every device buffer has k_guard bytes of sentinel
// before and after it; output buffers are poisoned with NaN (all-ones bytes) before the launch. A
// case fails if a guard changed, an output element is still poison, a CUDA call failed or the
// NMSE is over tolerance (NaN fails). Exit 0 with a message when there is no CUDA device.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "backends/cuda/device_info.h"
#include "backends/cuda/elementwise.h"
#include "backends/cuda/linear_decode_nvfp4.h"
#include "backends/cuda/mhc.h"
#include "backends/cuda/norm.h"
#include "backends/cuda/rope.h"
#include "core/dtype.h"
#include "io/indexer_fp4_key.h"

namespace {

using dsv4::dims;
using dsv4::dtype;
using dsv4::tensor;

// ---- tolerances (NMSE) ----
// Copies and single IEEE operations round identically on both sides: bit-exact.
constexpr double k_tol_exact = 0.0;
// One transcendental per element (expf, sinf/cosf: CUDA <= 2 ulp, glibc < 1 ulp) or one
// reduction in a different order (rms_norm's sum of squares, FMA contraction in hc_post): a few
// 1e-7 relative per element at worst, NMSE ~1e-13; 1e-11 leaves margin and is 10 orders under a
// wrong result (NMSE ~1).
constexpr double k_tol_f32_rounding = 1e-11;
// mHC collapse: dot products over hc*D (up to 28672) inputs summed in a different order, then
// exp/sigmoid and 20 Sinkhorn rounds; relative errors up to ~1e-5 on cancelling sums.
constexpr double k_tol_mhc = 1e-8;
// bf16 activation storage (the *_bf16 variants of every case). The inputs are rounded to bf16
// before the CPU reference sees them, so both sides start from the same values and compute in
// f32; the kernel then rounds its output once to bf16 (round to nearest even, 8 significant
// bits: relative error <= 2^-9 per element). The CPU reference stays f32, so the NMSE measures
// that one rounding: sum(d^2) / sum(ref^2) <= 2^-18 ~ 3.8e-6 in the worst case, ~1.3e-6 for
// uniformly spread mantissas, plus the f32 tolerance of the op. 1e-5 bounds it with margin and is
// 5 orders under a wrong result; an op whose bf16 result is exact (copies, fake quantization onto
// grids that bf16 holds exactly) keeps its f32 tolerance. Outputs that stay f32 with bf16
// activations (mHC post / comb, router logits and weights, the head's logits, compressor state)
// keep their f32 tolerance too.
constexpr double k_tol_bf16_output = 1e-5;

constexpr size_t k_guard = 256;  // bytes of sentinel on each side of every device buffer
constexpr unsigned char k_guard_byte = 0xA5;
constexpr uint32_t k_poison = 0xFFFFFFFFu;  // a NaN: all bytes 0xFF

struct cuda_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void cuda_check(cudaError_t status, const char* what, const char* file, int line) {
  if (status != cudaSuccess) {
    char message[512];
    std::snprintf(message, sizeof(message), "%s failed at %s:%d: %s (%s)", what, file, line,
                  cudaGetErrorName(status), cudaGetErrorString(status));
    throw cuda_failure(message);
  }
}
#define CUDA_CHECK(expr) cuda_check((expr), #expr, __FILE__, __LINE__)

// ---- random inputs ----
// splitmix64: fast enough to fill the perf mode's hundreds of MB, and seedable per case.
struct rng {
  uint64_t state;
  explicit rng(uint64_t seed) : state(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float uniform(float lo, float hi) { return lo + (hi - lo) * float(next() >> 40) * 0x1p-24f; }
  int32_t below(int64_t n) { return int32_t(next() % uint64_t(n)); }
};

tensor random_f32(rng& r, const dims& shape, float lo, float hi) {
  tensor t = tensor::empty(dtype::f32, shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = r.uniform(lo, hi);
  return t;
}

tensor random_i32(rng& r, const dims& shape, int64_t below) {
  tensor t = tensor::empty(dtype::i32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int32_t>()[i] = r.below(below);
  return t;
}

// ---- guarded device buffers ----
// [guard | offset | data (bytes) | guard]; `offset` extra bytes before the data (sentinel-filled,
// checked like the guard) make misaligned pointers for the kernels' scalar paths.
class device_buffer {
 public:
  explicit device_buffer(size_t bytes, size_t offset = 0)
      : bytes_(bytes), offset_(offset), total_(k_guard + offset + bytes + k_guard) {
    CUDA_CHECK(cudaMalloc(&base_, total_));
    CUDA_CHECK(cudaMemset(base_, k_guard_byte, total_));
  }
  explicit device_buffer(const tensor& host, size_t offset = 0)
      : device_buffer(host.bytes(), offset) {
    upload(host);
  }
  ~device_buffer() {
    if (base_) cudaFree(base_);
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  void* data() const { return static_cast<unsigned char*>(base_) + k_guard + offset_; }
  float* f32() const { return static_cast<float*>(data()); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data());
  }
  int32_t* i32() const { return static_cast<int32_t*>(data()); }
  size_t bytes() const { return bytes_; }

  void upload(const tensor& host) {
    if (host.bytes() != bytes_) throw std::runtime_error("device_buffer: upload size mismatch");
    CUDA_CHECK(cudaMemcpy(data(), host.data<void>(), bytes_, cudaMemcpyHostToDevice));
  }
  void poison() { CUDA_CHECK(cudaMemset(data(), 0xFF, bytes_)); }

  // The data as f32 host values; checks the guards on the way (appends to `problems`).
  std::vector<float> download_checked(const char* name, std::string& problems) const {
    const std::vector<unsigned char> raw = download_bytes_checked(name, problems);
    std::vector<float> values(bytes_ / 4);
    std::memcpy(values.data(), raw.data(), values.size() * 4);
    return values;
  }

  // The data bytes; checks the guards on the way (appends to `problems`).
  std::vector<unsigned char> download_bytes_checked(const char* name, std::string& problems) const {
    std::vector<unsigned char> all(total_);
    CUDA_CHECK(cudaMemcpy(all.data(), base_, total_, cudaMemcpyDeviceToHost));
    const size_t head = k_guard + offset_;
    size_t bad = 0;
    for (size_t i = 0; i < head; ++i) bad += all[i] != k_guard_byte;
    for (size_t i = head + bytes_; i < total_; ++i) bad += all[i] != k_guard_byte;
    if (bad) problems += std::string(" ") + name + ": " + std::to_string(bad) + " guard bytes";
    return std::vector<unsigned char>(all.begin() + head, all.begin() + head + bytes_);
  }

 private:
  void* base_ = nullptr;
  size_t bytes_, offset_, total_;
};

// ---- comparison ----
struct case_result {
  bool ok = true;
  double nmse = 0;  // worst over the case's outputs
  std::string problems;
};

// Adds the NMSE of `gpu` against `ref` to `result`; poisoned elements and NaN fail the case.
void compare(const char* name, const std::vector<float>& gpu, const tensor& ref, double tol,
             bool poisoned_output, case_result& result) {
  const float* b = ref.data<float>();
  const int64_t n = ref.numel();
  if (int64_t(gpu.size()) != n) {
    result.ok = false;
    result.problems += std::string(" ") + name + ": size mismatch";
    return;
  }
  double err = 0, norm = 0;
  int64_t poisoned = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &gpu[i], 4);
    if (poisoned_output && bits == k_poison) ++poisoned;
    const double d = double(gpu[i]) - double(b[i]);
    err += d * d;
    norm += double(b[i]) * double(b[i]);
  }
  const double nmse = norm > 0 ? err / norm : err;
  if (poisoned) {
    result.ok = false;
    result.problems += std::string(" ") + name + ": " + std::to_string(poisoned) + " unwritten";
  }
  if (!(nmse <= tol)) {  // NaN fails
    result.ok = false;
    char buf[128];
    std::snprintf(buf, sizeof(buf), " %s: nmse %.3e > %.1e", name, nmse, tol);
    result.problems += buf;
  }
  if (!(nmse <= result.nmse)) result.nmse = nmse;  // keeps NaN
}

void check_guards(const char* name, const device_buffer& buffer, case_result& result) {
  std::string problems;
  buffer.download_checked(name, problems);
  if (!problems.empty()) {
    result.ok = false;
    result.problems += problems;
  }
}

std::vector<float> download_output(const char* name, const device_buffer& buffer,
                                   case_result& result) {
  std::string problems;
  std::vector<float> values = buffer.download_checked(name, problems);
  if (!problems.empty()) {
    result.ok = false;
    result.problems += problems;
  }
  return values;
}

// ---- activation storage (f32 or bf16) ----
using bf16 = __nv_bfloat16;
template <typename act_t>
constexpr bool is_bf16 = std::is_same_v<act_t, bf16>;

// " bf16" for the bf16 variant of a case (appended to its shape), "" for f32.
template <typename act_t>
const char* act_suffix() {
  return is_bf16<act_t> ? " bf16" : "";
}

// The tolerance of an activation output: the f32 one, or k_tol_bf16_output with bf16 storage.
template <typename act_t>
double act_tol(double f32_tol) {
  return is_bf16<act_t> ? std::max(f32_tol, k_tol_bf16_output) : f32_tol;
}

// f32 values rounded to bf16 (RNE) in place when act_t is bf16, so the CPU reference sees the
// values the kernel loads; returns t.
template <typename act_t>
tensor& act_round(tensor& t) {
  if constexpr (is_bf16<act_t>) {
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = dsv4::bf16_to_f32(dsv4::f32_to_bf16(p[i]));
  }
  return t;
}

// The host bytes of f32 tensor t in act_t storage (t itself for f32).
template <typename act_t>
tensor act_host(const tensor& t) {
  if constexpr (!is_bf16<act_t>) {
    return t;
  } else {
    tensor b = tensor::empty(dtype::bf16, t.shape());
    const float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) b.data<uint16_t>()[i] = dsv4::f32_to_bf16(p[i]);
    return b;
  }
}

template <typename act_t>
size_t act_bytes(int64_t numel) {
  return size_t(numel) * sizeof(act_t);
}

// An activation output as f32 values (guards checked); an all-ones bf16 (the poison) maps to the
// f32 poison so compare() counts it as unwritten.
template <typename act_t>
std::vector<float> download_act(const char* name, const device_buffer& buffer,
                                case_result& result) {
  if constexpr (!is_bf16<act_t>) {
    return download_output(name, buffer, result);
  } else {
    std::string problems;
    const std::vector<unsigned char> raw = buffer.download_bytes_checked(name, problems);
    if (!problems.empty()) {
      result.ok = false;
      result.problems += problems;
    }
    std::vector<float> values(raw.size() / 2);
    for (size_t i = 0; i < values.size(); ++i) {
      uint16_t bits;
      std::memcpy(&bits, raw.data() + 2 * i, 2);
      if (bits == 0xFFFFu) {
        const uint32_t poison = k_poison;
        std::memcpy(&values[i], &poison, 4);
      } else {
        values[i] = dsv4::bf16_to_f32(bits);
      }
    }
    return values;
  }
}

// ---- perf ----
struct perf_result {
  double ms = 0;
  double bytes = 0;  // read + written once per launch
  double flops = 0;  // 0 where not meaningful
};

// Median of `runs` event-timed launches after warm-up; launch(r) should use input set r % sets.
// Timed runs per perf case (--perf-runs): 100 by default; fewer under a profiler that times each
// launch on the device (the event-timed medians include the host's launch latency, which
// dominates kernels of a few microseconds).
int g_perf_runs = 100;

double time_median_ms(const std::function<void(int)>& launch, int runs = -1, int warmup = 5) {
  if (runs < 0) runs = g_perf_runs;
  for (int r = 0; r < warmup; ++r) launch(r);
  CUDA_CHECK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<float> times(runs);
  for (int r = 0; r < runs; ++r) {
    CUDA_CHECK(cudaEventRecord(start, 0));
    launch(warmup + r);
    CUDA_CHECK(cudaEventRecord(stop, 0));
    CUDA_CHECK(cudaEventSynchronize(stop));
    CUDA_CHECK(cudaEventElapsedTime(&times[r], start, stop));
  }
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  return times[runs / 2];
}

size_t g_l2_bytes = 50u << 20;

// How many copies of a working set of `bytes` to rotate through so that consecutive launches
// miss L2: the rotation covers >= 4x L2, at least 1 and at most 64 copies.
int rotation_sets(double bytes) {
  const double want = 4.0 * double(g_l2_bytes);
  int sets = int(std::ceil(want / std::max(bytes, 1.0)));
  return std::clamp(sets, 1, 64);
}

// A set of device buffers (one per rotation) filled with copies of one random host tensor.
struct rotated {
  std::vector<std::unique_ptr<device_buffer>> sets;
  rotated(const tensor& host, int count) {
    for (int i = 0; i < count; ++i) sets.push_back(std::make_unique<device_buffer>(host));
  }
  rotated(size_t bytes, int count) {
    for (int i = 0; i < count; ++i) sets.push_back(std::make_unique<device_buffer>(bytes));
  }
  float* f32(int r) const { return sets[r % sets.size()]->f32(); }
  int32_t* i32(int r) const { return sets[r % sets.size()]->i32(); }
};

double measure_copy_gbps() {
  const size_t bytes = size_t(1) << 30;
  void *src, *dst;
  CUDA_CHECK(cudaMalloc(&src, bytes));
  CUDA_CHECK(cudaMalloc(&dst, bytes));
  CUDA_CHECK(cudaMemset(src, 0x3C, bytes));
  const double ms = time_median_ms(
      [&](int) { CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, 0)); }, 20,
      3);
  CUDA_CHECK(cudaFree(src));
  CUDA_CHECK(cudaFree(dst));
  return 2.0 * double(bytes) / (ms * 1e-3) / 1e9;
}

// ---- cases ----
struct test_case {
  std::string op;
  std::string shape;
  std::function<case_result(uint64_t seed)> check;
  std::function<perf_result()> perf;  // set only for perf cases
};

std::string fmt_shape(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string fmt_shape(const char* format, ...) {
  char buf[256];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof(buf), format, args);
  va_end(args);
  return buf;
}

dsv4::cpu::cpu_ops& cpu() {
  static dsv4::cpu::cpu_ops ops;
  return ops;
}

// rms_norm over [rows, n] in `groups` slices; `offset` floats of misalignment on x and y.
template <typename act_t = float>
test_case rms_norm_case(int64_t rows, int64_t n, int64_t groups, bool weighted,
                        int64_t offset = 0) {
  test_case c;
  c.op = "rms_norm";
  c.shape = fmt_shape("rows=%lld n=%lld groups=%lld %s%s%s", (long long)rows, (long long)n,
                      (long long)groups, weighted ? "weighted" : "unweighted",
                      offset ? " misaligned" : "", act_suffix<act_t>());
  const float eps = 1e-6f;
  c.check = [=](uint64_t seed) {
    rng r(seed);
    const int64_t g = n / groups;
    tensor x = random_f32(r, {rows, n}, -3.0f, 3.0f);
    act_round<act_t>(x);
    tensor w = random_f32(r, {g}, 0.5f, 1.5f);
    tensor ref = cpu().rms_norm(x, weighted ? &w : nullptr, eps, groups);
    case_result result;
    const size_t misalign = offset * sizeof(act_t);
    device_buffer dx(act_host<act_t>(x), misalign), dw(w),
        dy(act_bytes<act_t>(x.numel()), misalign);
    dy.poison();
    CUDA_CHECK(dsv4::cuda::rms_norm(dx.as<act_t>(), weighted ? dw.f32() : nullptr, dy.as<act_t>(),
                                    rows, n, groups, eps, 0));
    CUDA_CHECK(cudaDeviceSynchronize());
    compare("y", download_act<act_t>("y", dy, result), ref, act_tol<act_t>(k_tol_f32_rounding),
            true, result);
    check_guards("x", dx, result);
    check_guards("w", dw, result);
    return result;
  };
  return c;
}

test_case rms_norm_perf(int64_t rows, int64_t n, int64_t groups) {
  test_case c = rms_norm_case(rows, n, groups, true);
  c.perf = [=] {
    rng r(1);
    tensor x = random_f32(r, {rows, n}, -3.0f, 3.0f);
    tensor w = random_f32(r, {n / groups}, 0.5f, 1.5f);
    perf_result p;
    p.bytes = 2.0 * double(x.bytes()) + double(w.bytes());
    const int sets = rotation_sets(p.bytes);
    rotated dx(x, sets), dy(x.bytes(), sets);
    device_buffer dw(w);
    p.ms = time_median_ms([&](int i) {
      CUDA_CHECK(dsv4::cuda::rms_norm(dx.f32(i), dw.f32(), dy.f32(i), rows, n, groups, 1e-6f, 0));
    });
    return p;
  };
  return c;
}

tensor rope_inv_freq(rng& r, int64_t rope_dim) {
  // Realistic frequencies (theta 10000, the first pair at 1 rad per position), jittered per case.
  tensor f = tensor::empty(dtype::f32, {rope_dim / 2});
  for (int64_t i = 0; i < rope_dim / 2; ++i)
    f.data<float>()[i] =
        std::pow(10000.0f, -2.0f * float(i) / float(rope_dim)) * r.uniform(0.9f, 1.1f);
  return f;
}

template <typename act_t = float>
test_case rope_case(int64_t T, int64_t heads, int64_t head_dim, int64_t rope_dim, bool inverse,
                    int32_t max_position) {
  test_case c;
  c.op = "rope";
  c.shape = fmt_shape("T=%lld heads=%lld head_dim=%lld rope=%lld%s pos<%d%s", (long long)T,
                      (long long)heads, (long long)head_dim, (long long)rope_dim,
                      inverse ? " inverse" : "", max_position, act_suffix<act_t>());
  c.check = [=](uint64_t seed) {
    rng r(seed);
    tensor x = random_f32(r, {T, heads * head_dim}, -2.0f, 2.0f);
    act_round<act_t>(x);
    tensor positions = random_i32(r, {T}, max_position);
    positions.data<int32_t>()[0] = max_position - 1;  // the largest angle always appears
    tensor inv_freq = rope_inv_freq(r, rope_dim);
    case_result result;
    device_buffer dx(act_host<act_t>(x)), dpos(positions), dfreq(inv_freq);
    tensor ref = cpu().upload(x.view());
    cpu().rope(ref, heads, head_dim, rope_dim, positions, inv_freq, inverse);
    CUDA_CHECK(dsv4::cuda::rope(dx.as<act_t>(), T, heads, head_dim, rope_dim, dpos.i32(),
                                dfreq.f32(), inverse, 0));
    CUDA_CHECK(cudaDeviceSynchronize());
    // In place: the output cannot be poisoned; an unrotated pair shows up as NMSE instead.
    compare("x", download_act<act_t>("x", dx, result), ref, act_tol<act_t>(k_tol_f32_rounding),
            false, result);
    check_guards("positions", dpos, result);
    check_guards("inv_freq", dfreq, result);
    return result;
  };
  return c;
}

test_case rope_perf(int64_t T, int64_t heads, int64_t head_dim, int64_t rope_dim) {
  test_case c = rope_case(T, heads, head_dim, rope_dim, false, 1 << 20);
  c.perf = [=] {
    rng r(2);
    tensor x = random_f32(r, {T, heads * head_dim}, -2.0f, 2.0f);
    tensor positions = random_i32(r, {T}, 1 << 20);
    tensor inv_freq = rope_inv_freq(r, rope_dim);
    perf_result p;
    // Only the rotated dims move (in 32-byte sectors they are whole, rope_dim * 4 >= 32).
    p.bytes = 2.0 * double(T * heads * rope_dim * 4) + double(T * 4);
    const int sets = rotation_sets(double(x.bytes()));
    rotated dx(x, sets);
    device_buffer dpos(positions), dfreq(inv_freq);
    p.ms = time_median_ms([&](int i) {
      CUDA_CHECK(dsv4::cuda::rope(dx.f32(i), T, heads, head_dim, rope_dim, dpos.i32(), dfreq.f32(),
                                  false, 0));
    });
    return p;
  };
  return c;
}

template <typename act_t = float>
test_case swiglu_case(int64_t rows, int64_t n, float limit, int64_t offset = 0) {
  test_case c;
  c.op = "swiglu";
  c.shape = fmt_shape("rows=%lld n=%lld limit=%g%s%s", (long long)rows, (long long)n, limit,
                      offset ? " misaligned" : "", act_suffix<act_t>());
  c.check = [=](uint64_t seed) {
    rng r(seed);
    // Inputs beyond +-limit so both clamps are exercised.
    tensor gate = random_f32(r, {rows, n}, -1.5f * limit, 1.5f * limit);
    tensor up = random_f32(r, {rows, n}, -1.5f * limit, 1.5f * limit);
    act_round<act_t>(gate);
    act_round<act_t>(up);
    tensor ref = cpu().swiglu(gate, up, limit);
    case_result result;
    device_buffer dg(act_host<act_t>(gate), offset * sizeof(act_t)), du(act_host<act_t>(up)),
        dy(act_bytes<act_t>(gate.numel()));
    dy.poison();
    CUDA_CHECK(
        dsv4::cuda::swiglu(dg.as<act_t>(), du.as<act_t>(), dy.as<act_t>(), rows * n, limit, 0));
    CUDA_CHECK(cudaDeviceSynchronize());
    compare("y", download_act<act_t>("y", dy, result), ref, act_tol<act_t>(k_tol_f32_rounding),
            true, result);
    check_guards("gate", dg, result);
    check_guards("up", du, result);
    return result;
  };
  return c;
}

test_case swiglu_perf(int64_t rows, int64_t n) {
  test_case c = swiglu_case(rows, n, 10.0f);
  c.perf = [=] {
    rng r(3);
    tensor g = random_f32(r, {rows, n}, -15.0f, 15.0f);
    perf_result p;
    p.bytes = 3.0 * double(g.bytes());
    const int sets = rotation_sets(p.bytes);
    rotated dg(g, sets), du(g, sets), dy(g.bytes(), sets);
    p.ms = time_median_ms([&](int i) {
      CUDA_CHECK(dsv4::cuda::swiglu(dg.f32(i), du.f32(i), dy.f32(i), rows * n, 10.0f, 0));
    });
    return p;
  };
  return c;
}

template <typename act_t = float>
test_case add_case(int64_t n, int64_t offset = 0) {
  test_case c;
  c.op = "add";
  c.shape = fmt_shape("n=%lld%s%s", (long long)n, offset ? " misaligned" : "", act_suffix<act_t>());
  c.check = [=](uint64_t seed) {
    rng r(seed);
    tensor x = random_f32(r, {n}, -4.0f, 4.0f);
    tensor y = random_f32(r, {n}, -4.0f, 4.0f);
    act_round<act_t>(x);
    act_round<act_t>(y);
    case_result result;
    device_buffer dx(act_host<act_t>(x), offset * sizeof(act_t)), dy(act_host<act_t>(y));
    tensor ref = cpu().upload(x.view());
    cpu().add(ref, y);
    CUDA_CHECK(dsv4::cuda::add(dx.as<act_t>(), dy.as<act_t>(), n, 0));
    CUDA_CHECK(cudaDeviceSynchronize());
    compare("x", download_act<act_t>("x", dx, result), ref, act_tol<act_t>(k_tol_exact), false,
            result);
    check_guards("y", dy, result);
    return result;
  };
  return c;
}

test_case add_perf(int64_t n) {
  test_case c = add_case(n);
  c.perf = [=] {
    rng r(4);
    tensor x = random_f32(r, {n}, -4.0f, 4.0f);
    perf_result p;
    p.bytes = 3.0 * double(x.bytes());
    const int sets = rotation_sets(p.bytes);
    rotated dx(x, sets), dy(x, sets);
    p.ms = time_median_ms([&](int i) { CUDA_CHECK(dsv4::cuda::add(dx.f32(i), dy.f32(i), n, 0)); });
    return p;
  };
  return c;
}

template <typename act_t = float>
test_case scale_case(int64_t n) {
  test_case c;
  c.op = "scale";
  c.shape = fmt_shape("n=%lld%s", (long long)n, act_suffix<act_t>());
  c.check = [=](uint64_t seed) {
    rng r(seed);
    tensor x = random_f32(r, {n}, -4.0f, 4.0f);
    act_round<act_t>(x);
    const float s = r.uniform(-2.0f, 2.0f);
    case_result result;
    device_buffer dx(act_host<act_t>(x));
    tensor ref = cpu().upload(x.view());
    cpu().scale(ref, s);
    CUDA_CHECK(dsv4::cuda::scale(dx.as<act_t>(), s, n, 0));
    CUDA_CHECK(cudaDeviceSynchronize());
    compare("x", download_act<act_t>("x", dx, result), ref, act_tol<act_t>(k_tol_exact), false,
            result);
    return result;
  };
  return c;
}

template <typename act_t = float>
test_case embed_case(int64_t vocab, int64_t dim, int64_t T) {
  test_case c;
  c.op = "embed";
  c.shape = fmt_shape("vocab=%lld dim=%lld T=%lld%s", (long long)vocab, (long long)dim,
                      (long long)T, act_suffix<act_t>());
  c.check = [=](uint64_t seed) {
    rng r(seed);
    tensor table = random_f32(r, {vocab, dim}, -1.0f, 1.0f);
    tensor ids = random_i32(r, {T}, vocab);
    ids.data<int32_t>()[0] = int32_t(vocab - 1);  // the last row: 64-bit offsets at large vocab
    if (T > 1) ids.data<int32_t>()[1] = 0;
    tensor ref = cpu().embed(table, ids);
    case_result result;
    // The table stays f32 (a weight); bf16 rounds each copied value once.
    device_buffer dtable(table), dids(ids), dout(act_bytes<act_t>(ref.numel()));
    dout.poison();
    CUDA_CHECK(dsv4::cuda::embed(dtable.f32(), vocab, dim, dids.i32(), T, dout.as<act_t>(), 0));
    CUDA_CHECK(cudaDeviceSynchronize());
    compare("out", download_act<act_t>("out", dout, result), ref, act_tol<act_t>(k_tol_exact), true,
            result);
    check_guards("table", dtable, result);
    check_guards("ids", dids, result);
    return result;
  };
  return c;
}

test_case embed_perf(int64_t vocab, int64_t dim, int64_t T) {
  test_case c = embed_case(vocab, dim, T);
  c.perf = [=] {
    rng r(5);
    tensor table = random_f32(r, {vocab, dim}, -1.0f, 1.0f);
    tensor ids = random_i32(r, {T}, vocab);
    perf_result p;
    p.bytes = 2.0 * double(T * dim * 4) + double(T * 4);
    const int sets = rotation_sets(p.bytes);
    device_buffer dtable(table);
    rotated dids(ids, sets), dout(size_t(T * dim * 4), sets);
    p.ms = time_median_ms([&](int i) {
      CUDA_CHECK(dsv4::cuda::embed(dtable.f32(), vocab, dim, dids.i32(i), T, dout.f32(i), 0));
    });
    return p;
  };
  return c;
}

struct mhc_inputs {
  tensor x, fn, base, scale;
};

// Realistic magnitudes: fn entries U(-a, a) with a = sqrt(3 / (hc*D)) make the normalised mixes
// ~N(0, 1), so sigmoids and the softmax are neither flat nor saturated.
mhc_inputs random_mhc(rng& r, int64_t T, int64_t hc, int64_t D, int64_t mix) {
  mhc_inputs in;
  const float a = std::sqrt(3.0f / float(hc * D));
  in.x = random_f32(r, {T, hc, D}, -2.0f, 2.0f);
  in.fn = random_f32(r, {mix, hc * D}, -a, a);
  in.base = random_f32(r, {mix}, -1.0f, 1.0f);
  in.scale = random_f32(r, {3}, 0.2f, 2.0f);
  return in;
}

const char* hc_path_suffix(dsv4::cuda::hc_collapse_path path) {
  return path == dsv4::cuda::hc_collapse_path::block     ? " block"
         : path == dsv4::cuda::hc_collapse_path::cluster ? " cluster"
         : path == dsv4::cuda::hc_collapse_path::split   ? " split"
                                                         : "";
}

template <typename act_t = float>
test_case hc_pre_case(int64_t T, int64_t hc, int64_t D, int64_t iters,
                      dsv4::cuda::hc_collapse_path path = dsv4::cuda::hc_collapse_path::automatic) {
  test_case c;
  c.op = "hc_pre";
  c.shape = fmt_shape("T=%lld hc=%lld D=%lld iters=%lld%s%s", (long long)T, (long long)hc,
                      (long long)D, (long long)iters, act_suffix<act_t>(), hc_path_suffix(path));
  const float hc_eps = 1e-6f, norm_eps = 1e-6f;
  c.check = [=](uint64_t seed) {
    rng r(seed);
    const int64_t mix = (2 + hc) * hc;
    mhc_inputs in = random_mhc(r, T, hc, D, mix);
    act_round<act_t>(in.x);
    tensor post = tensor::empty(dtype::f32, {T, hc});
    tensor comb = tensor::empty(dtype::f32, {T, hc, hc});
    tensor ref = cpu().hc_pre(in.x, in.fn, in.base, in.scale, iters, hc_eps, norm_eps, post, comb);
    case_result result;
    device_buffer dx(act_host<act_t>(in.x)), dfn(in.fn), dbase(in.base), dscale(in.scale);
    device_buffer dy(act_bytes<act_t>(ref.numel())), dpost(post.bytes()), dcomb(comb.bytes());
    dy.poison();
    dpost.poison();
    dcomb.poison();
    // The engine's workspace (automatic takes the split path with it at decode sizes).
    device_buffer dws(std::max<size_t>(dsv4::cuda::hc_collapse_workspace_bytes(T, hc, D), 4));
    dws.poison();
    CUDA_CHECK(dsv4::cuda::hc_pre(dx.as<act_t>(), dfn.f32(), dbase.f32(), dscale.f32(), T, hc, D,
                                  iters, hc_eps, norm_eps, dy.as<act_t>(), dpost.f32(), dcomb.f32(),
                                  0, path, dws.data(), dws.bytes()));
    CUDA_CHECK(cudaDeviceSynchronize());
    compare("y", download_act<act_t>("y", dy, result), ref, act_tol<act_t>(k_tol_mhc), true,
            result);
    compare("post", download_output("post", dpost, result), post, k_tol_mhc, true, result);
    compare("comb", download_output("comb", dcomb, result), comb, k_tol_mhc, true, result);
    check_guards("x", dx, result);
    check_guards("fn", dfn, result);
    check_guards("workspace", dws, result);
    return result;
  };
  return c;
}

test_case hc_pre_perf(int64_t T, int64_t hc, int64_t D,
                      dsv4::cuda::hc_collapse_path path = dsv4::cuda::hc_collapse_path::automatic) {
  test_case c = hc_pre_case(T, hc, D, 20, path);
  c.perf = [=] {
    rng r(6);
    const int64_t mix = (2 + hc) * hc;
    mhc_inputs in = random_mhc(r, T, hc, D, mix);
    perf_result p;
    p.bytes = double(in.x.bytes() + in.fn.bytes() + T * D * 4 + T * hc * 4 + T * hc * hc * 4);
    p.flops = 2.0 * double(T) * double(mix) * double(hc * D);
    const int sets = rotation_sets(p.bytes);
    rotated dx(in.x, sets), dy(size_t(T * D * 4), sets), dpost(size_t(T * hc * 4), sets),
        dcomb(size_t(T * hc * hc * 4), sets);
    device_buffer dfn(in.fn), dbase(in.base), dscale(in.scale);
    device_buffer dws(std::max<size_t>(dsv4::cuda::hc_collapse_workspace_bytes(T, hc, D), 4));
    p.ms = time_median_ms([&](int i) {
      CUDA_CHECK(dsv4::cuda::hc_pre(dx.f32(i), dfn.f32(), dbase.f32(), dscale.f32(), T, hc, D, 20,
                                    1e-6f, 1e-6f, dy.f32(i), dpost.f32(i), dcomb.f32(i), 0, path,
                                    dws.data(), dws.bytes()));
    });
    return p;
  };
  return c;
}

template <typename act_t = float>
test_case hc_post_case(int64_t T, int64_t hc, int64_t D) {
  test_case c;
  c.op = "hc_post";
  c.shape = fmt_shape("T=%lld hc=%lld D=%lld%s", (long long)T, (long long)hc, (long long)D,
                      act_suffix<act_t>());
  c.check = [=](uint64_t seed) {
    rng r(seed);
    tensor x = random_f32(r, {T, hc, D}, -2.0f, 2.0f);
    tensor f = random_f32(r, {T, D}, -2.0f, 2.0f);
    tensor post = random_f32(r, {T, hc}, 0.0f, 2.0f);
    tensor comb = random_f32(r, {T, hc, hc}, 0.0f, 1.0f);
    act_round<act_t>(x);
    act_round<act_t>(f);
    tensor ref = cpu().hc_post(x, f, post, comb);
    case_result result;
    device_buffer dx(act_host<act_t>(x)), df(act_host<act_t>(f)), dpost(post), dcomb(comb),
        dout(act_bytes<act_t>(ref.numel()));
    dout.poison();
    CUDA_CHECK(dsv4::cuda::hc_post(dx.as<act_t>(), df.as<act_t>(), dpost.f32(), dcomb.f32(), T, hc,
                                   D, dout.as<act_t>(), 0));
    CUDA_CHECK(cudaDeviceSynchronize());
    compare("out", download_act<act_t>("out", dout, result), ref,
            act_tol<act_t>(k_tol_f32_rounding), true, result);
    check_guards("x", dx, result);
    check_guards("f", df, result);
    return result;
  };
  return c;
}

test_case hc_post_perf(int64_t T, int64_t hc, int64_t D) {
  test_case c = hc_post_case(T, hc, D);
  c.perf = [=] {
    rng r(7);
    tensor x = random_f32(r, {T, hc, D}, -2.0f, 2.0f);
    tensor f = random_f32(r, {T, D}, -2.0f, 2.0f);
    tensor post = random_f32(r, {T, hc}, 0.0f, 2.0f);
    tensor comb = random_f32(r, {T, hc, hc}, 0.0f, 1.0f);
    perf_result p;
    p.bytes = double(2 * x.bytes() + f.bytes() + post.bytes() + comb.bytes());
    const int sets = rotation_sets(p.bytes);
    rotated dx(x, sets), df(f, sets), dout(x.bytes(), sets);
    device_buffer dpost(post), dcomb(comb);
    p.ms = time_median_ms([&](int i) {
      CUDA_CHECK(dsv4::cuda::hc_post(dx.f32(i), df.f32(i), dpost.f32(), dcomb.f32(), T, hc, D,
                                     dout.f32(i), 0));
    });
    return p;
  };
  return c;
}

template <typename act_t = float>
test_case hc_head_case(
    int64_t T, int64_t hc, int64_t D,
    dsv4::cuda::hc_collapse_path path = dsv4::cuda::hc_collapse_path::automatic) {
  test_case c;
  c.op = "hc_head";
  c.shape = fmt_shape("T=%lld hc=%lld D=%lld%s%s", (long long)T, (long long)hc, (long long)D,
                      act_suffix<act_t>(), hc_path_suffix(path));
  const float hc_eps = 1e-6f, norm_eps = 1e-6f;
  c.check = [=](uint64_t seed) {
    rng r(seed);
    mhc_inputs in = random_mhc(r, T, hc, D, hc);
    act_round<act_t>(in.x);
    tensor ref = cpu().hc_head(in.x, in.fn, in.base, in.scale, hc_eps, norm_eps);
    case_result result;
    device_buffer dx(act_host<act_t>(in.x)), dfn(in.fn), dbase(in.base), dscale(in.scale),
        dy(act_bytes<act_t>(ref.numel()));
    dy.poison();
    device_buffer dws(std::max<size_t>(dsv4::cuda::hc_collapse_workspace_bytes(T, hc, D), 4));
    dws.poison();
    CUDA_CHECK(dsv4::cuda::hc_head(dx.as<act_t>(), dfn.f32(), dbase.f32(), dscale.f32(), T, hc, D,
                                   hc_eps, norm_eps, dy.as<act_t>(), 0, path, dws.data(),
                                   dws.bytes()));
    CUDA_CHECK(cudaDeviceSynchronize());
    compare("y", download_act<act_t>("y", dy, result), ref, act_tol<act_t>(k_tol_mhc), true,
            result);
    check_guards("x", dx, result);
    check_guards("fn", dfn, result);
    check_guards("workspace", dws, result);
    return result;
  };
  return c;
}

// The collapse's two kernels (a cluster of 8 CTAs per token group, one CTA per group) keep one
// order of every sum: the same inputs through both must give y, post and comb bit for bit.
// hc_pre and hc_head (head: mix = hc, no post / comb).
template <typename act_t = float>
test_case hc_collapse_kernels_agree_case(bool head, int64_t T, int64_t hc, int64_t D) {
  test_case c;
  c.op = head ? "hc_head_kernels_agree" : "hc_pre_kernels_agree";
  c.shape = fmt_shape("T=%lld hc=%lld D=%lld%s", (long long)T, (long long)hc, (long long)D,
                      act_suffix<act_t>());
  c.check = [=](uint64_t seed) {
    rng r(seed);
    const int64_t mix = head ? hc : (2 + hc) * hc;
    mhc_inputs in = random_mhc(r, T, hc, D, mix);
    act_round<act_t>(in.x);
    case_result result;
    device_buffer dx(act_host<act_t>(in.x)), dfn(in.fn), dbase(in.base), dscale(in.scale);
    // Per kernel: y, post, comb.
    std::vector<float> out[2][3];
    const dsv4::cuda::hc_collapse_path paths[2] = {dsv4::cuda::hc_collapse_path::block,
                                                   dsv4::cuda::hc_collapse_path::cluster};
    for (int k = 0; k < 2; ++k) {
      device_buffer dy(act_bytes<act_t>(T * D)), dpost(size_t(T * hc * 4)),
          dcomb(size_t(T * hc * hc * 4));
      dy.poison();
      dpost.poison();
      dcomb.poison();
      if (head) {
        CUDA_CHECK(dsv4::cuda::hc_head(dx.as<act_t>(), dfn.f32(), dbase.f32(), dscale.f32(), T, hc,
                                       D, 1e-6f, 1e-6f, dy.as<act_t>(), 0, paths[k]));
      } else {
        CUDA_CHECK(dsv4::cuda::hc_pre(dx.as<act_t>(), dfn.f32(), dbase.f32(), dscale.f32(), T, hc,
                                      D, 20, 1e-6f, 1e-6f, dy.as<act_t>(), dpost.f32(), dcomb.f32(),
                                      0, paths[k]));
      }
      CUDA_CHECK(cudaDeviceSynchronize());
      out[k][0] = download_act<act_t>("y", dy, result);
      if (!head) {
        out[k][1] = download_output("post", dpost, result);
        out[k][2] = download_output("comb", dcomb, result);
      }
    }
    const char* names[3] = {"y", "post", "comb"};
    for (int o = 0; o < (head ? 1 : 3); ++o) {
      tensor block = tensor::empty(dtype::f32, {int64_t(out[0][o].size())});
      std::memcpy(block.data<float>(), out[0][o].data(), out[0][o].size() * 4);
      compare(names[o], out[1][o], block, k_tol_exact, true, result);
    }
    check_guards("x", dx, result);
    check_guards("fn", dfn, result);
    return result;
  };
  return c;
}

// The split path refuses what it cannot take (more than hc_collapse_split_max_tokens tokens, a
// missing or short workspace) before any launch, and automatic then falls back to the cluster
// kernel (same y as the CPU reference).
test_case hc_split_refusals_case() {
  test_case c;
  c.op = "hc_pre_split_refusals";
  c.shape = "T=65 / short workspace";
  c.check = [=](uint64_t seed) {
    rng r(seed);
    const int64_t hc = 4, D = 256, mix = (2 + hc) * hc;
    case_result result;
    auto run = [&](int64_t T, size_t ws_bytes, dsv4::cuda::hc_collapse_path path) {
      mhc_inputs in = random_mhc(r, T, hc, D, mix);
      device_buffer dx(in.x), dfn(in.fn), dbase(in.base), dscale(in.scale), dy(size_t(T * D * 4)),
          dpost(size_t(T * hc * 4)), dcomb(size_t(T * hc * hc * 4)),
          dws(std::max<size_t>(ws_bytes, 4));
      const cudaError_t e = dsv4::cuda::hc_pre(
          dx.f32(), dfn.f32(), dbase.f32(), dscale.f32(), T, hc, D, 20, 1e-6f, 1e-6f, dy.f32(),
          dpost.f32(), dcomb.f32(), 0, path, ws_bytes ? dws.data() : nullptr, ws_bytes);
      CUDA_CHECK(cudaDeviceSynchronize());
      return e;
    };
    using dsv4::cuda::hc_collapse_path;
    const int64_t over = dsv4::cuda::hc_collapse_split_max_tokens + 1;
    const size_t need = dsv4::cuda::hc_collapse_workspace_bytes(4, hc, D);
    if (run(over, dsv4::cuda::hc_collapse_workspace_bytes(over, hc, D), hc_collapse_path::split) !=
        cudaErrorInvalidValue) {
      result.ok = false;
      result.problems += " split accepted more than its token limit";
    }
    if (run(4, need - 4, hc_collapse_path::split) != cudaErrorInvalidValue) {
      result.ok = false;
      result.problems += " split accepted a short workspace";
    }
    if (run(4, 0, hc_collapse_path::split) != cudaErrorInvalidValue) {
      result.ok = false;
      result.problems += " split accepted no workspace";
    }
    if (run(4, need - 4, hc_collapse_path::automatic) != cudaSuccess) {
      result.ok = false;
      result.problems += " automatic failed with a short workspace";
    }
    return result;
  };
  return c;
}

// hc_post -> hc_pre -> rms_norm fused (mhc.h hc_post_pre_norm; the model's chain between two
// sub-layers) against the CPU's three ops, with x_next and y rounded to act_t between them as the
// kernels store them. with_f false: the first layer's collapse (no residual update).
// fp8: also the FP8 copy (out_fp8), which must equal the CPU's fake_quant_fp8_act of the kernel's
// own out bit for bit (the copy rounds out; out itself is compared with the reference above).
// gates_apart: hc_post_pre_norm(..., gates = false), which must leave post and comb as they were,
// then hc_post_pre_norm_gates; post, comb and out must also equal the one-call form's bit for bit.
template <typename act_t = float>
test_case hc_post_pre_norm_case(int64_t T, int64_t hc, int64_t D, int64_t iters, bool with_f,
                                bool fp8 = false, bool gates_apart = false) {
  test_case c;
  c.op = gates_apart ? "hc_post_pre_norm_gates" : "hc_post_pre_norm";
  c.shape =
      fmt_shape("T=%lld hc=%lld D=%lld iters=%lld%s%s%s", (long long)T, (long long)hc, (long long)D,
                (long long)iters, with_f ? "" : " no f", fp8 ? " fp8" : "", act_suffix<act_t>());
  const float hc_eps = 1e-6f, norm_eps = 1e-6f;
  c.check = [=](uint64_t seed) {
    rng r(seed);
    const int64_t mix = (2 + hc) * hc;
    mhc_inputs in = random_mhc(r, T, hc, D, mix);
    tensor f = random_f32(r, {T, D}, -2.0f, 2.0f);
    tensor post = random_f32(r, {T, hc}, 0.0f, 2.0f);  // the finished sub-layer's gates
    tensor comb = random_f32(r, {T, hc, hc}, 0.0f, 1.0f);
    tensor w = random_f32(r, {D}, 0.5f, 1.5f);
    act_round<act_t>(in.x);
    act_round<act_t>(f);
    tensor next = with_f ? cpu().hc_post(in.x, f, post, comb) : in.x;
    act_round<act_t>(next);
    tensor new_post = tensor::empty(dtype::f32, {T, hc});
    tensor new_comb = tensor::empty(dtype::f32, {T, hc, hc});
    tensor y =
        cpu().hc_pre(next, in.fn, in.base, in.scale, iters, hc_eps, norm_eps, new_post, new_comb);
    act_round<act_t>(y);
    tensor ref = cpu().rms_norm(y, &w, norm_eps, 1);
    case_result result;
    device_buffer dx(act_host<act_t>(in.x)), df(act_host<act_t>(f)), dfn(in.fn), dbase(in.base),
        dscale(in.scale), dw(w), dpost(post), dcomb(comb);
    device_buffer dnext(act_bytes<act_t>(in.x.numel())), dout(act_bytes<act_t>(ref.numel())),
        dq(act_bytes<act_t>(ref.numel()));
    dnext.poison();
    dout.poison();
    dq.poison();
    device_buffer dws(std::max<size_t>(dsv4::cuda::hc_collapse_workspace_bytes(T, hc, D), 4));
    dws.poison();
    auto run = [&](device_buffer& o, device_buffer& p, device_buffer& cb, bool gates) {
      return dsv4::cuda::hc_post_pre_norm(
          dx.as<act_t>(), with_f ? df.as<act_t>() : nullptr, dfn.f32(), dbase.f32(), dscale.f32(),
          dw.f32(), T, hc, D, iters, hc_eps, norm_eps, with_f ? dnext.as<act_t>() : nullptr,
          o.as<act_t>(), fp8 ? dq.as<act_t>() : nullptr, p.f32(), cb.f32(), 0, dws.data(),
          dws.bytes(), gates);
    };
    if (gates_apart) {
      // The one-call form first, into its own gates and output (x_next and the FP8 copy are
      // rewritten with the same values by the split form below).
      device_buffer dpost1(post), dcomb1(comb), dout1(act_bytes<act_t>(ref.numel()));
      CUDA_CHECK(run(dout1, dpost1, dcomb1, true));
      CUDA_CHECK(run(dout, dpost, dcomb, false));
      CUDA_CHECK(cudaDeviceSynchronize());
      compare("post before the gates", download_output("post", dpost, result), post, k_tol_exact,
              true, result);
      compare("comb before the gates", download_output("comb", dcomb, result), comb, k_tol_exact,
              true, result);
      CUDA_CHECK(dsv4::cuda::hc_post_pre_norm_gates(dws.data(), dws.bytes(), dbase.f32(),
                                                    dscale.f32(), T, hc, D, iters, hc_eps, norm_eps,
                                                    dpost.f32(), dcomb.f32(), 0));
      CUDA_CHECK(cudaDeviceSynchronize());
      auto as_tensor = [](const std::vector<float>& v, const dims& shape) {
        tensor t = tensor::empty(dtype::f32, shape);
        if (v.size() == size_t(t.numel())) std::copy(v.begin(), v.end(), t.data<float>());
        return t;
      };
      compare("post vs one call", download_output("post", dpost, result),
              as_tensor(download_output("post1", dpost1, result), {T, hc}), k_tol_exact, true,
              result);
      compare("comb vs one call", download_output("comb", dcomb, result),
              as_tensor(download_output("comb1", dcomb1, result), {T, hc, hc}), k_tol_exact, true,
              result);
      compare("out vs one call", download_act<act_t>("out", dout, result),
              as_tensor(download_act<act_t>("out1", dout1, result), {T, D}), k_tol_exact, true,
              result);
    } else {
      CUDA_CHECK(run(dout, dpost, dcomb, true));
      CUDA_CHECK(cudaDeviceSynchronize());
    }
    const std::vector<float> out = download_act<act_t>("out", dout, result);
    compare("out", out, ref, act_tol<act_t>(k_tol_mhc), true, result);
    if (fp8 && out.size() == size_t(T * D)) {
      // out holds act_t values: the kernel's input to its copy.
      tensor q = tensor::empty(dtype::f32, {T, D});
      std::copy(out.begin(), out.end(), q.data<float>());
      cpu().fake_quant_fp8_act(q, 128);
      compare("out_fp8", download_act<act_t>("out_fp8", dq, result), q, k_tol_exact, true, result);
    } else if (!fp8) {
      check_guards("out_fp8 (unused)", dq, result);
    }
    if (with_f)
      compare("x_next", download_act<act_t>("x_next", dnext, result), next,
              act_tol<act_t>(k_tol_f32_rounding), true, result);
    compare("post", download_output("post", dpost, result), new_post, k_tol_mhc, true, result);
    compare("comb", download_output("comb", dcomb, result), new_comb, k_tol_mhc, true, result);
    check_guards("x", dx, result);
    check_guards("f", df, result);
    check_guards("fn", dfn, result);
    check_guards("norm weight", dw, result);
    check_guards("workspace", dws, result);
    if (!with_f) check_guards("x_next (unused)", dnext, result);
    return result;
  };
  return c;
}

// Refusals: more tokens than the split path takes, rows wider than the registers hold, no
// workspace, f without x_next.
test_case hc_post_pre_norm_refusals_case() {
  test_case c;
  c.op = "hc_post_pre_norm_refusals";
  c.shape = "T=65 / D=8193 / no workspace / no x_next / fp8 D=200";
  c.check = [=](uint64_t) {
    case_result result;
    const int64_t hc = 4;
    auto run = [&](int64_t T, int64_t D, bool ws, bool next, bool fp8 = false) {
      const size_t bytes = dsv4::cuda::hc_collapse_workspace_bytes(T, hc, D);
      device_buffer dx(size_t(T * hc * D * 4)), df(size_t(T * D * 4)),
          dfn(size_t((2 + hc) * hc * hc * D * 4)), dsmall(size_t(64 * 4)), dw(size_t(D * 4)),
          dnext(size_t(T * hc * D * 4)), dout(size_t(T * D * 4)), dq(size_t(T * D * 4)),
          dpost(size_t(T * hc * 4)), dcomb(size_t(T * hc * hc * 4)),
          dws(std::max<size_t>(bytes, 4));
      const cudaError_t e = dsv4::cuda::hc_post_pre_norm(
          dx.f32(), df.f32(), dfn.f32(), dsmall.f32(), dsmall.f32(), dw.f32(), T, hc, D, 20, 1e-6f,
          1e-6f, next ? dnext.f32() : nullptr, dout.f32(), fp8 ? dq.f32() : nullptr, dpost.f32(),
          dcomb.f32(), 0, ws ? dws.data() : nullptr, ws ? bytes : 0);
      CUDA_CHECK(cudaDeviceSynchronize());
      return e;
    };
    auto expect = [&](bool ok, const char* what) {
      if (!ok) {
        result.ok = false;
        result.problems += std::string(" ") + what;
      }
    };
    expect(
        run(dsv4::cuda::hc_collapse_split_max_tokens + 1, 256, true, true) == cudaErrorInvalidValue,
        "accepted more than the split path's tokens");
    expect(run(2, 8193, true, true) == cudaErrorInvalidValue, "accepted D = 8193");
    expect(run(2, 256, false, true) == cudaErrorInvalidValue, "accepted no workspace");
    expect(run(2, 256, true, false) == cudaErrorInvalidValue, "accepted f without x_next");
    expect(run(2, 8192, true, true) == cudaSuccess, "refused D = 8192");
    expect(run(2, 200, true, true, true) == cudaErrorInvalidValue,
           "accepted an FP8 copy of D % 128 != 0");
    expect(run(2, 256, true, true, true) == cudaSuccess, "refused an FP8 copy of D = 256");
    return result;
  };
  return c;
}

// fused: hc_post_pre_norm's two launches; otherwise the chain it replaces (hc_post, hc_pre's split
// path, rms_norm: four launches), on the same buffers.
// gates false (fused): the two launches without the gates CTA, the part of the call that the
// next sub-layer waits for when the CUDA backend runs the gates apart.
test_case hc_post_pre_norm_perf(int64_t T, int64_t hc, int64_t D, bool fused, bool gates = true) {
  test_case c = hc_post_pre_norm_case(T, hc, D, 20, true);
  c.op = !fused  ? "hc_post_pre_norm chain"
         : gates ? "hc_post_pre_norm"
                 : "hc_post_pre_norm without gates";
  c.perf = [=] {
    rng r(8);
    const int64_t mix = (2 + hc) * hc;
    mhc_inputs in = random_mhc(r, T, hc, D, mix);
    tensor f = random_f32(r, {T, D}, -2.0f, 2.0f);
    tensor post = random_f32(r, {T, hc}, 0.0f, 2.0f);
    tensor comb = random_f32(r, {T, hc, hc}, 0.0f, 1.0f);
    tensor w = random_f32(r, {D}, 0.5f, 1.5f);
    perf_result p;
    p.bytes = double(2 * in.x.bytes() + f.bytes() + in.fn.bytes() + 2 * T * D * 4);
    const int sets = rotation_sets(p.bytes);
    rotated dx(in.x, sets), df(f, sets), dnext(in.x.bytes(), sets), dy(size_t(T * D * 4), sets),
        dout(size_t(T * D * 4), sets), dpost(post, sets), dcomb(comb, sets);
    device_buffer dfn(in.fn), dbase(in.base), dscale(in.scale), dw(w);
    device_buffer dws(std::max<size_t>(dsv4::cuda::hc_collapse_workspace_bytes(T, hc, D), 4));
    p.ms = time_median_ms([&](int i) {
      if (fused) {
        CUDA_CHECK(dsv4::cuda::hc_post_pre_norm(
            dx.f32(i), df.f32(i), dfn.f32(), dbase.f32(), dscale.f32(), dw.f32(), T, hc, D, 20,
            1e-6f, 1e-6f, dnext.f32(i), dout.f32(i), static_cast<float*>(nullptr), dpost.f32(i),
            dcomb.f32(i), 0, dws.data(), dws.bytes(), gates));
        return;
      }
      CUDA_CHECK(dsv4::cuda::hc_post(dx.f32(i), df.f32(i), dpost.f32(i), dcomb.f32(i), T, hc, D,
                                     dnext.f32(i), 0));
      CUDA_CHECK(dsv4::cuda::hc_pre(dnext.f32(i), dfn.f32(), dbase.f32(), dscale.f32(), T, hc, D,
                                    20, 1e-6f, 1e-6f, dy.f32(i), dpost.f32(i), dcomb.f32(i), 0,
                                    dsv4::cuda::hc_collapse_path::split, dws.data(), dws.bytes()));
      CUDA_CHECK(dsv4::cuda::rms_norm(dy.f32(i), dw.f32(), dout.f32(i), T, D, 1, 1e-6f, 0));
    });
    return p;
  };
  return c;
}

test_case hc_head_perf(
    int64_t T, int64_t hc, int64_t D,
    dsv4::cuda::hc_collapse_path path = dsv4::cuda::hc_collapse_path::automatic) {
  test_case c = hc_head_case(T, hc, D, path);
  c.perf = [=] {
    rng r(8);
    mhc_inputs in = random_mhc(r, T, hc, D, hc);
    perf_result p;
    p.bytes = double(in.x.bytes() + in.fn.bytes() + T * D * 4);
    p.flops = 2.0 * double(T) * double(hc) * double(hc * D);
    const int sets = rotation_sets(p.bytes);
    rotated dx(in.x, sets), dy(size_t(T * D * 4), sets);
    device_buffer dfn(in.fn), dbase(in.base), dscale(in.scale);
    device_buffer dws(std::max<size_t>(dsv4::cuda::hc_collapse_workspace_bytes(T, hc, D), 4));
    p.ms = time_median_ms([&](int i) {
      CUDA_CHECK(dsv4::cuda::hc_head(dx.f32(i), dfn.f32(), dbase.f32(), dscale.f32(), T, hc, D,
                                     1e-6f, 1e-6f, dy.f32(i), 0, path, dws.data(), dws.bytes()));
    });
    return p;
  };
  return c;
}

// DeepSeek-V4 dimensions. Flash: hidden 4096, 64 heads x 512, rope 64, q_lora 1024, hc 4,
// MoE inter 2048. Pro: hidden 7168, 128 heads x 512, q_lora 1536, MoE inter 3072.
constexpr int64_t k_flash_hidden = 4096, k_pro_hidden = 7168;
constexpr int64_t k_flash_heads = 64, k_pro_heads = 128, k_head_dim = 512, k_rope_dim = 64;
constexpr int64_t k_flash_q_lora = 1024, k_pro_q_lora = 1536, k_hc = 4;
constexpr int64_t k_flash_moe_inter = 2048, k_pro_moe_inter = 3072, k_vocab = 129280;

#include "cases_attention.inc"
#include "cases_attention_decode.inc"
#include "cases_indexer.inc"
#include "cases_indexer_fp4.inc"
#include "cases_linear.inc"
#include "cases_linear_gemm.inc"
// clang-format off
#include "cases_linear_fp8act.inc"
#include "cases_linear_fp8_cublaslt.inc"
#include "cases_linear_w8a8_wgmma.inc"
// clang-format on
#include "cases_quantize.inc"
// After cases_quantize.inc (nmse_of, k_tol_moe_official); a separate block so that
// clang-format keeps the order.
#include "cases_moe_decode.inc"
#include "cases_moe_prefill.inc"
// After cases_moe_decode.inc (device_stack, encode_random, put_repacked).
#include "cases_linear_nvfp4.inc"
#include "cases_linear_repacked.inc"
// After cases_quantize.inc (quant_input, distinct_rows), in this order.
// clang-format off
#include "cases_kv_record.inc"
#include "cases_attention_fp8.inc"
// clang-format on

std::vector<test_case> make_eval_cases() {
  std::vector<test_case> cases;
  // rms_norm: hidden (attn/ffn norms), q_lora / kv norms, per-head q norm (groups), odd sizes
  // (scalar path), misaligned pointers, and a slice longer than the register share.
  for (int64_t rows : {1, 37}) {
    cases.push_back(rms_norm_case(rows, k_flash_hidden, 1, true));
    cases.push_back(rms_norm_case(rows, k_pro_hidden, 1, true));
  }
  cases.push_back(rms_norm_case(33, k_flash_q_lora, 1, true));
  cases.push_back(rms_norm_case(9, k_pro_q_lora, 1, true));
  cases.push_back(rms_norm_case(5, k_head_dim, 1, true));
  cases.push_back(rms_norm_case(7, k_flash_heads * k_head_dim, k_flash_heads, false));
  cases.push_back(rms_norm_case(3, k_pro_heads * k_head_dim, k_pro_heads, false));
  cases.push_back(rms_norm_case(4, k_flash_heads * k_head_dim, k_flash_heads, true));
  cases.push_back(rms_norm_case(1, 1, 1, true));
  cases.push_back(rms_norm_case(3, 7, 1, true));
  cases.push_back(rms_norm_case(5, 33, 3, true));
  cases.push_back(rms_norm_case(4, 12, 4, false));
  cases.push_back(rms_norm_case(2, 4100, 1, true));
  cases.push_back(rms_norm_case(3, 4099, 1, false));
  cases.push_back(rms_norm_case(6, 4096, 1, true, 1));
  // More slices than 2 x the SMs: the weights loaded after the reduction (norm.cu).
  cases.push_back(rms_norm_case(300, k_flash_hidden, 1, true));
  cases.push_back(rms_norm_case(300, 33, 1, true));
  cases.push_back(rms_norm_case(2, 40000, 1, true));
  cases.push_back(rms_norm_case(1, 65537, 1, false));

  // rope: q (all heads, rope on the last 64 of 512), kv (one head), inverse (output de-rotation),
  // the indexer's 128-wide heads, positions up to 1M (large angles), odd and tiny shapes.
  cases.push_back(rope_case(5, k_flash_heads, k_head_dim, k_rope_dim, false, 4096));
  cases.push_back(rope_case(5, k_flash_heads, k_head_dim, k_rope_dim, true, 4096));
  cases.push_back(rope_case(3, k_pro_heads, k_head_dim, k_rope_dim, false, 1 << 20));
  cases.push_back(rope_case(17, 1, k_head_dim, k_rope_dim, false, 1 << 20));
  cases.push_back(rope_case(9, 64, 128, k_rope_dim, true, 65536));
  cases.push_back(rope_case(3, 3, 10, 4, false, 100));
  cases.push_back(rope_case(2, 5, 7, 2, true, 1000));
  cases.push_back(rope_case(1, 1, 2, 2, false, 7));
  cases.push_back(rope_case(4, 2, 64, 64, false, 1 << 20));

  // swiglu: MoE and shared-expert widths, clamps exercised, odd sizes and a misaligned gate.
  cases.push_back(swiglu_case(7, k_flash_moe_inter, 10.0f));
  cases.push_back(swiglu_case(3, k_pro_moe_inter, 10.0f));
  cases.push_back(swiglu_case(1, 1, 7.0f));
  cases.push_back(swiglu_case(5, 1023, 7.0f));
  cases.push_back(swiglu_case(2, 4097, 7.0f));
  cases.push_back(swiglu_case(3, 2048, 7.0f, 1));

  cases.push_back(add_case(k_hc * k_flash_hidden * 3));
  cases.push_back(add_case(4097));
  cases.push_back(add_case(1));
  cases.push_back(add_case(4096, 3));
  cases.push_back(scale_case(k_flash_hidden * 5));
  cases.push_back(scale_case(1023));

  // embed: real hidden sizes from a small table, the real vocabulary with a narrow row (the
  // last id's offset passes 2^31 bytes at dim 4096 only, kept out of the CPU's memory here),
  // odd dims (scalar path).
  cases.push_back(embed_case(1000, k_flash_hidden, 9));
  cases.push_back(embed_case(1000, k_pro_hidden, 4));
  cases.push_back(embed_case(k_vocab, 64, 33));
  cases.push_back(embed_case(17, 33, 5));
  cases.push_back(embed_case(1, 1, 1));
  cases.push_back(embed_case(300, 4097, 3));

  // mHC: Flash and Pro widths with token counts around the collapse's 4 tokens per group (a
  // cluster of 8 CTAs per group up to 32 tokens on 132 SMs), fewer streams, tiny and odd widths,
  // other Sinkhorn depths.
  for (int64_t T : {1, 3, 6}) cases.push_back(hc_pre_case(T, k_hc, k_flash_hidden, 20));
  cases.push_back(hc_pre_case(5, k_hc, k_pro_hidden, 20));
  cases.push_back(hc_pre_case(5, k_hc, 64, 20));
  cases.push_back(hc_pre_case(7, 2, 33, 20));
  cases.push_back(hc_pre_case(9, 3, 5, 1));
  cases.push_back(hc_pre_case(2, 1, 16, 20));
  cases.push_back(hc_pre_case(4, k_hc, 130, 3));
  // Many token groups: 25 and 75 (the cluster kernel, several waves), 150 (more than the 132
  // SMs of an H100 / H200: the one-CTA kernel).
  cases.push_back(hc_pre_case(100, k_hc, 130, 20));
  cases.push_back(hc_pre_case(300, k_hc, 64, 20));
  cases.push_back(hc_pre_case(600, k_hc, 64, 20));
  // Both collapse kernels on the same inputs: partial token groups, Pro width, fewer streams,
  // widths that leave lanes idle (hc * D not a multiple of 256), one stream.
  cases.push_back(hc_collapse_kernels_agree_case(false, 6, k_hc, k_flash_hidden));
  cases.push_back(hc_collapse_kernels_agree_case(true, 6, k_hc, k_flash_hidden));
  cases.push_back(hc_collapse_kernels_agree_case<bf16>(false, 6, k_hc, k_flash_hidden));
  cases.push_back(hc_collapse_kernels_agree_case<bf16>(true, 1, k_hc, k_flash_hidden));
  cases.push_back(hc_collapse_kernels_agree_case(false, 5, k_hc, k_pro_hidden));
  cases.push_back(hc_collapse_kernels_agree_case(false, 37, k_hc, 130));
  cases.push_back(hc_collapse_kernels_agree_case(false, 7, 2, 33));
  cases.push_back(hc_collapse_kernels_agree_case(true, 3, 1, 1));
  cases.push_back(hc_collapse_kernels_agree_case(false, 2, 3, 5));
  // The split path (automatic's choice at decode sizes given a workspace, as above) at its token
  // limit, Pro width, bf16, chunks that do not fill 128 inputs, one stream; the cluster kernel
  // against the CPU at the sizes the split path now takes; the refusals.
  {
    using dsv4::cuda::hc_collapse_path;
    for (int64_t T : {1, 4, 9, 64}) {
      cases.push_back(hc_pre_case(T, k_hc, k_flash_hidden, 20, hc_collapse_path::split));
      cases.push_back(hc_head_case(T, k_hc, k_flash_hidden, hc_collapse_path::split));
    }
    cases.push_back(hc_pre_case(3, k_hc, k_pro_hidden, 20, hc_collapse_path::split));
    cases.push_back(hc_pre_case<bf16>(2, k_hc, k_flash_hidden, 20, hc_collapse_path::split));
    cases.push_back(hc_head_case<bf16>(1, k_hc, k_pro_hidden, hc_collapse_path::split));
    cases.push_back(hc_pre_case(7, 2, 33, 20, hc_collapse_path::split));
    cases.push_back(hc_pre_case(5, k_hc, 130, 3, hc_collapse_path::split));
    cases.push_back(hc_pre_case(3, 1, 16, 1, hc_collapse_path::split));
    cases.push_back(hc_head_case(2, 1, 1, hc_collapse_path::split));
    cases.push_back(hc_pre_case(3, k_hc, k_flash_hidden, 20, hc_collapse_path::cluster));
    cases.push_back(hc_head_case(1, k_hc, k_flash_hidden, hc_collapse_path::cluster));
    cases.push_back(hc_split_refusals_case());
    // hc_post_pre_norm: decode sizes, the split path's token limit, Pro width, bf16, the first
    // layer's form (no f), chunks that straddle streams (D = 130), one stream, the register limit.
    for (int64_t T : {1, 3, 24, 64})
      cases.push_back(hc_post_pre_norm_case(T, k_hc, k_flash_hidden, 20, true));
    cases.push_back(hc_post_pre_norm_case(2, k_hc, k_flash_hidden, 20, false));
    cases.push_back(hc_post_pre_norm_case(3, k_hc, k_pro_hidden, 20, true));
    cases.push_back(hc_post_pre_norm_case<bf16>(2, k_hc, k_flash_hidden, 20, true));
    cases.push_back(hc_post_pre_norm_case<bf16>(1, k_hc, k_pro_hidden, 20, false));
    cases.push_back(hc_post_pre_norm_case(5, k_hc, 130, 3, true));
    cases.push_back(hc_post_pre_norm_case(7, 2, 33, 20, true));
    cases.push_back(hc_post_pre_norm_case(3, 1, 16, 1, true));
    cases.push_back(hc_post_pre_norm_case(2, k_hc, 8192, 20, true));
    // With the FP8 copy (the FFN's input in official mode).
    cases.push_back(hc_post_pre_norm_case(3, k_hc, k_flash_hidden, 20, true, true));
    cases.push_back(hc_post_pre_norm_case<bf16>(3, k_hc, k_flash_hidden, 20, true, true));
    cases.push_back(hc_post_pre_norm_case<bf16>(24, k_hc, k_pro_hidden, 20, true, true));
    cases.push_back(hc_post_pre_norm_case<bf16>(1, k_hc, 128, 20, false, true));
    cases.push_back(hc_post_pre_norm_refusals_case());
    // The gates apart (the CUDA backend's decode form).
    cases.push_back(hc_post_pre_norm_case(1, k_hc, k_flash_hidden, 20, true, false, true));
    cases.push_back(hc_post_pre_norm_case(2, k_hc, k_flash_hidden, 20, false, false, true));
    cases.push_back(hc_post_pre_norm_case(5, k_hc, 130, 3, true, false, true));
    cases.push_back(hc_post_pre_norm_case<bf16>(3, k_hc, k_flash_hidden, 20, true, true, true));
    cases.push_back(hc_post_pre_norm_case<bf16>(24, k_hc, k_pro_hidden, 20, true, true, true));
    cases.push_back(hc_post_pre_norm_case<bf16>(64, k_hc, k_flash_hidden, 20, true, false, true));
  }

  for (int64_t T : {1, 5}) {
    cases.push_back(hc_post_case(T, k_hc, k_flash_hidden));
    cases.push_back(hc_post_case(T, k_hc, k_pro_hidden));
  }
  cases.push_back(hc_post_case(5, 3, 33));
  cases.push_back(hc_post_case(1, 1, 1));
  cases.push_back(hc_post_case(3, 2, 4099));

  for (int64_t T : {1, 6}) {
    cases.push_back(hc_head_case(T, k_hc, k_flash_hidden));
    cases.push_back(hc_head_case(T, k_hc, k_pro_hidden));
  }
  cases.push_back(hc_head_case(5, 2, 17));
  cases.push_back(hc_head_case(3, 1, 1));

  // bf16 activation storage: the real shapes, the scalar paths (odd sizes, misalignment by one
  // bf16) and the vector paths of every op above.
  cases.push_back(rms_norm_case<bf16>(37, k_flash_hidden, 1, true));
  cases.push_back(rms_norm_case<bf16>(7, k_flash_heads * k_head_dim, k_flash_heads, false));
  cases.push_back(rms_norm_case<bf16>(3, 4099, 1, false));
  cases.push_back(rms_norm_case<bf16>(6, 4096, 1, true, 1));
  cases.push_back(rms_norm_case<bf16>(2, 40000, 1, true));
  cases.push_back(rope_case<bf16>(5, k_flash_heads, k_head_dim, k_rope_dim, false, 4096));
  cases.push_back(rope_case<bf16>(9, 64, 128, k_rope_dim, true, 65536));
  cases.push_back(rope_case<bf16>(3, 3, 10, 4, false, 100));
  cases.push_back(swiglu_case<bf16>(7, k_flash_moe_inter, 10.0f));
  cases.push_back(swiglu_case<bf16>(5, 1023, 7.0f));
  cases.push_back(swiglu_case<bf16>(3, 2048, 7.0f, 1));
  cases.push_back(add_case<bf16>(k_hc * k_flash_hidden * 3));
  cases.push_back(add_case<bf16>(4097));
  cases.push_back(add_case<bf16>(4096, 3));
  cases.push_back(scale_case<bf16>(k_flash_hidden * 5));
  cases.push_back(scale_case<bf16>(1023));
  cases.push_back(embed_case<bf16>(1000, k_flash_hidden, 9));
  cases.push_back(embed_case<bf16>(17, 33, 5));
  cases.push_back(hc_pre_case<bf16>(6, k_hc, k_flash_hidden, 20));
  cases.push_back(hc_pre_case<bf16>(7, 2, 33, 20));
  cases.push_back(hc_post_case<bf16>(5, k_hc, k_flash_hidden));
  cases.push_back(hc_post_case<bf16>(3, 2, 4099));
  cases.push_back(hc_head_case<bf16>(6, k_hc, k_flash_hidden));
  cases.push_back(hc_head_case<bf16>(5, 2, 17));
  append_attention_eval_cases(cases);
  append_attention_decode_eval_cases(cases);
  append_indexer_eval_cases(cases);
  append_indexer_fp4_cases(cases);
  append_linear_eval_cases(cases);
  append_linear_gemm_eval_cases(cases);
  append_linear_decode_fp8act_eval_cases(cases);
  append_linear_fp8_cublaslt_eval_cases(cases);
  append_linear_w8a8_wgmma_eval_cases(cases);
  append_quantize_eval_cases(cases);
  append_kv_record_eval_cases(cases);
  append_attention_fp8_eval_cases(cases);
  append_moe_decode_eval_cases(cases);
  append_moe_prefill_eval_cases(cases);
  append_linear_decode_eval_cases(cases);
  append_linear_decode_repacked_eval_cases(cases);
  append_moe_decode_w2_pair_cases(cases);  // last: the cases above keep their seeds
  append_linear_decode_nvfp4_eval_cases(cases);  // after: the cases above keep their seeds
  return cases;
}

// Prefill-sized steps (4096 tokens) and decode-sized batches (64 tokens, rotated through L2).
std::vector<test_case> make_perf_cases() {
  std::vector<test_case> cases;
  for (int64_t T : {64, 4096}) {
    cases.push_back(rms_norm_perf(T, k_flash_hidden, 1));
    cases.push_back(rms_norm_perf(T, k_pro_hidden, 1));
  }
  cases.push_back(rms_norm_perf(4096, k_flash_q_lora, 1));
  cases.push_back(rms_norm_perf(4096, k_flash_heads * k_head_dim, k_flash_heads));
  cases.push_back(rope_perf(4096, k_flash_heads, k_head_dim, k_rope_dim));
  cases.push_back(rope_perf(4096, 1, k_head_dim, k_rope_dim));
  cases.push_back(swiglu_perf(4096 * 6, k_flash_moe_inter));
  cases.push_back(swiglu_perf(4096, k_pro_moe_inter));
  cases.push_back(add_perf(4096 * k_hc * k_flash_hidden));
  cases.push_back(embed_perf(32768, k_flash_hidden, 4096));
  cases.push_back(embed_perf(32768, k_pro_hidden, 64));
  for (int64_t T : {1, 4, 64, 4096}) {
    cases.push_back(hc_pre_perf(T, k_hc, k_flash_hidden));
    cases.push_back(hc_post_perf(T, k_hc, k_flash_hidden));
    cases.push_back(hc_head_perf(T, k_hc, k_flash_hidden));
  }
  // The collapse's two kernels at sizes around the automatic choice.
  for (int64_t T : {1, 4, 16, 24, 32, 48, 64, 128, 512, 2048}) {
    for (auto path : {dsv4::cuda::hc_collapse_path::block, dsv4::cuda::hc_collapse_path::cluster,
                      dsv4::cuda::hc_collapse_path::split}) {
      if (path == dsv4::cuda::hc_collapse_path::split &&
          T > dsv4::cuda::hc_collapse_split_max_tokens)
        continue;
      cases.push_back(hc_pre_perf(T, k_hc, k_flash_hidden, path));
      if (T <= 64) cases.push_back(hc_head_perf(T, k_hc, k_flash_hidden, path));
    }
  }
  cases.push_back(hc_pre_perf(4, k_hc, k_pro_hidden, dsv4::cuda::hc_collapse_path::block));
  cases.push_back(hc_pre_perf(4, k_hc, k_pro_hidden, dsv4::cuda::hc_collapse_path::cluster));
  cases.push_back(hc_pre_perf(4, k_hc, k_pro_hidden, dsv4::cuda::hc_collapse_path::split));
  cases.push_back(hc_pre_perf(4096, k_hc, k_pro_hidden));
  cases.push_back(hc_post_perf(4096, k_hc, k_pro_hidden));
  for (int64_t T : {1, 4, 16}) {
    cases.push_back(hc_post_pre_norm_perf(T, k_hc, k_flash_hidden, false));
    cases.push_back(hc_post_pre_norm_perf(T, k_hc, k_flash_hidden, true));
    cases.push_back(hc_post_pre_norm_perf(T, k_hc, k_flash_hidden, true, false));
  }
  cases.push_back(hc_post_pre_norm_perf(4, k_hc, k_pro_hidden, false));
  cases.push_back(hc_post_pre_norm_perf(4, k_hc, k_pro_hidden, true));
  append_attention_perf_cases(cases);
  append_linear_perf_cases(cases);
  append_linear_gemm_perf_cases(cases);
  append_quantize_perf_cases(cases);
  append_kv_record_perf_cases(cases);
  append_moe_decode_perf_cases(cases);
  append_linear_decode_perf_cases(cases);
  return cases;
}

struct op_filter {
  std::vector<std::string> include, exclude;
  int64_t per_op = 0;  // > 0: at most this many cases of each op (the first ones listed)
  // Non-empty: only the cases at these positions of --list-cases (a shard of a parallel run, or
  // the cases a cut-short run left).
  std::vector<std::pair<int64_t, int64_t>> case_ranges;
  // "3,7-9,12" -> [3, 3], [7, 9], [12, 12]; false on anything else.
  static bool parse_ranges(const std::string& list, std::vector<std::pair<int64_t, int64_t>>& out) {
    for (const std::string& part : split(list)) {
      char* end = nullptr;
      const long long a = std::strtoll(part.c_str(), &end, 10);
      long long b = a;
      if (end == part.c_str() || a < 0) return false;
      if (*end == '-') {
        const char* start = end + 1;
        b = std::strtoll(start, &end, 10);
        if (end == start || b < a) return false;
      }
      if (*end != '\0') return false;
      out.emplace_back(a, b);
    }
    return !out.empty();
  }
  bool keeps_case(int64_t index) const {
    if (case_ranges.empty()) return true;
    for (const auto& [a, b] : case_ranges)
      if (index >= a && index <= b) return true;
    return false;
  }
  static std::vector<std::string> split(const std::string& list) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= list.size()) {
      const size_t comma = std::min(list.find(',', start), list.size());
      if (comma > start) out.push_back(list.substr(start, comma - start));
      start = comma + 1;
    }
    return out;
  }
  bool keeps(const std::string& op) const {
    auto in = [&](const std::vector<std::string>& v) {
      return std::find(v.begin(), v.end(), op) != v.end();
    };
    return (include.empty() || in(include)) && !in(exclude);
  }
  std::string str() const {
    std::string s;
    for (const std::string& o : include) s += " +" + o;
    for (const std::string& o : exclude) s += " -" + o;
    return s;
  }
};

int run_parity(const op_filter& filter, uint64_t seed) {
  int run = 0, failed = 0;
  uint64_t case_seed = seed;
  std::map<std::string, int64_t> run_per_op;
  int64_t index = -1;
  for (const test_case& c : make_eval_cases()) {
    ++case_seed;  // fresh inputs per case, reproducible from --seed
    ++index;
    if (!filter.keeps(c.op) || !filter.keeps_case(index)) continue;
    if (filter.per_op > 0 && run_per_op[c.op]++ >= filter.per_op) continue;
    ++run;
    case_result result;
    try {
      result = c.check(case_seed);
    } catch (const std::exception& e) {
      result.ok = false;
      result.problems = std::string(" exception: ") + e.what();
    }
    std::printf("  %-9s %-58s nmse=%-10.3e %s%s\n", c.op.c_str(), c.shape.c_str(), result.nmse,
                result.ok ? "OK" : "FAIL", result.problems.c_str());
    std::fflush(stdout);
    if (!result.ok) {
      ++failed;
      // A sticky error (e.g. an illegal address) poisons the context: later cases would only
      // repeat it.
      if (cudaDeviceSynchronize() != cudaSuccess) {
        std::printf("CUDA context lost after this case; stopping\n");
        return 1;
      }
    }
  }
  std::printf("%d/%d cases passed (seed %llu)\n", run - failed, run, (unsigned long long)seed);
  if (run == 0) {
    std::printf("no case matches the filter%s\n", filter.str().c_str());
    return 1;
  }
  return failed ? 1 : 0;
}

int run_perf(const op_filter& filter) {
  const double copy_gbps = measure_copy_gbps();
  std::printf("device-to-device copy: %.1f GB/s (read + write), the ceiling below\n", copy_gbps);
  std::printf("  %-9s %-58s %10s %9s %7s %9s\n", "op", "shape", "us", "GB/s", "%copy", "GFLOP/s");
  int run = 0;
  for (const test_case& c : make_perf_cases()) {
    if (!filter.keeps(c.op)) continue;
    ++run;
    const perf_result p = c.perf();
    const double gbps = p.bytes / (p.ms * 1e-3) / 1e9;
    char flops[32] = "-";
    if (p.flops > 0) std::snprintf(flops, sizeof(flops), "%.1f", p.flops / (p.ms * 1e-3) / 1e9);
    std::printf("  %-9s %-58s %10.2f %9.1f %6.1f%% %9s\n", c.op.c_str(), c.shape.c_str(),
                p.ms * 1e3, gbps, 100.0 * gbps / copy_gbps, flops);
    std::fflush(stdout);
  }
  if (run == 0) {
    std::printf("no perf case matches the filter%s\n", filter.str().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool perf = false;
  op_filter filter;
  uint64_t seed = 20261122;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--perf") {
      perf = true;
    } else if (arg == "--filter" && i + 1 < argc) {
      filter.include = op_filter::split(argv[++i]);
    } else if (arg == "--exclude" && i + 1 < argc) {
      filter.exclude = op_filter::split(argv[++i]);
    } else if (arg == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--perf-runs" && i + 1 < argc) {
      g_perf_runs = std::max(1, int(std::strtol(argv[++i], nullptr, 10)));
    } else if (arg == "--per-op" && i + 1 < argc) {
      filter.per_op = std::strtoll(argv[++i], nullptr, 10);
    } else if (arg == "--cases" && i + 1 < argc) {
      if (!op_filter::parse_ranges(argv[++i], filter.case_ranges)) {
        std::fprintf(stderr, "--cases: expected positions like 3,7-9 (of --list-cases), got '%s'\n",
                     argv[i]);
        return 2;
      }
    } else if (arg == "--list-cases") {  // position, op and shape of every parity case; no device
      int64_t index = 0;
      for (const test_case& c : make_eval_cases())
        std::printf("%lld %s %s\n", (long long)index++, c.op.c_str(), c.shape.c_str());
      return 0;
    } else if (arg == "--list") {  // op names and case counts of the parity cases; no device
      std::map<std::string, int> count;
      std::vector<std::string> order;
      for (const test_case& c : make_eval_cases())
        if (count[c.op]++ == 0) order.push_back(c.op);
      for (const std::string& op : order) std::printf("%s %d\n", op.c_str(), count[op]);
      return 0;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--perf [--perf-runs N]] [--filter OPS] [--exclude OPS] [--per-op N] "
                   "[--cases POSITIONS] [--seed N] | --list | --list-cases\n",
                   argv[0]);
      return 2;
    }
  }
  try {
    const std::vector<dsv4::cuda::device_info> devices = dsv4::cuda::list_devices();
    if (devices.empty()) {
      std::printf("test_backend_ops: no CUDA device, skipped\n");
      return 0;
    }
    const dsv4::cuda::device_info& device = devices[0];
    if (!dsv4::cuda::is_supported(device)) {
      std::printf("test_backend_ops: %s (compute %d.%d) is not sm_90, skipped\n",
                  device.name.c_str(), device.major, device.minor);
      return 0;
    }
    CUDA_CHECK(cudaSetDevice(device.index));
    g_l2_bytes = device.l2_bytes ? device.l2_bytes : g_l2_bytes;
    std::printf(
        "test_backend_ops: %s, %d SMs, %.1f GiB, L2 %.0f MiB, %.1f HBM bytes per SM cycle, mode "
        "%s\n",
        device.name.c_str(), device.sm_count,
        double(device.global_memory_bytes) / double(1ull << 30),
        double(device.l2_bytes) / double(1 << 20), dsv4::cuda::peak_read_bytes_per_sm_cycle(device),
        perf ? "perf" : "parity");
    return perf ? run_perf(filter) : run_parity(filter, seed);
  } catch (const std::exception& e) {
    std::printf("test_backend_ops: %s\n", e.what());
    return 1;
  }
}
