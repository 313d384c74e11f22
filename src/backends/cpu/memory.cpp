#include <cstring>

#include "backends/cpu/cpu_ops.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace dsv4::cpu {

void check_f32(const tensor& t, const char* what) {
  DSV4_CHECK(t.defined() && t.type() == dtype::f32, "cpu op: {} must be a defined f32 tensor",
             what);
}

tensor cpu_ops::alloc(dtype type, const dims& shape) {
  return tensor::empty(type, shape);
}

tensor cpu_ops::zeros(dtype type, const dims& shape) {
  return tensor::zeros(type, shape);
}

tensor cpu_ops::upload(const tensor_view& host) {
  DSV4_CHECK(host.is_contiguous(), "upload needs a contiguous view");
  tensor t = tensor::empty(host.type, host.shape);
  std::memcpy(t.data<void>(), host.data, host.bytes());
  return t;
}

tensor cpu_ops::upload_f32(const tensor_view& host) {
  return tensor::to_f32(host);
}

tensor cpu_ops::download(const tensor& device) {
  return upload(device.view());
}

void cpu_ops::upload_to(tensor& device, const tensor_view& host) {
  DSV4_CHECK(host.is_contiguous() && device.defined() && device.type() == host.type &&
                 device.numel() == host.numel() && device.view().is_contiguous(),
             "upload_to: {} {} into {}", dtype_name(host.type), host.shape.str(),
             device.defined() ? device.shape().str() : std::string("(undefined)"));
  std::memcpy(device.data<void>(), host.data, host.bytes());
}

std::unique_ptr<prepared_linear> cpu_ops::prepare_linear(const linear_weight& w) {
  auto p = std::make_unique<cpu_linear>();
  p->out = w.out;
  p->in = w.in;
  p->name = w.name;
  p->source_format = w.format;
  p->weight = dequantize_to_f32(w);
  return p;
}

std::unique_ptr<prepared_experts> cpu_ops::prepare_experts(const std::vector<linear_weight>& w1,
                                                           const std::vector<linear_weight>& w3,
                                                           const std::vector<linear_weight>& w2) {
  DSV4_CHECK(!w1.empty() && w1.size() == w3.size() && w1.size() == w2.size(),
             "prepare_experts: {} / {} / {} expert weights", w1.size(), w3.size(), w2.size());
  auto p = std::make_unique<cpu_experts>();
  p->count = int64_t(w1.size());
  p->inter = w1[0].out;
  p->hidden = w1[0].in;
  p->source_format = w1[0].format;
  p->w1.resize(w1.size());
  p->w3.resize(w1.size());
  p->w2.resize(w1.size());
  thread_pool::global().parallel_for(p->count, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      p->w1[i] = dequantize_to_f32(w1[i]);
      p->w3[i] = dequantize_to_f32(w3[i]);
      p->w2[i] = dequantize_to_f32(w2[i]);
    }
  });
  return p;
}

}  // namespace dsv4::cpu
