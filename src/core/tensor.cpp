#include "core/tensor.h"

#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace dsv4 {

dims::dims(std::initializer_list<int64_t> values) {
  DSV4_CHECK(values.size() <= size_t(k_max_rank), "rank {} exceeds the maximum {}", values.size(),
             k_max_rank);
  for (int64_t v : values) values_[rank_++] = v;
}

dims::dims(const std::vector<int64_t>& values) {
  DSV4_CHECK(values.size() <= size_t(k_max_rank), "rank {} exceeds the maximum {}", values.size(),
             k_max_rank);
  for (int64_t v : values) values_[rank_++] = v;
}

int64_t dims::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= values_[i];
  return n;
}

std::string dims::str() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ", ";
    s += std::to_string(values_[i]);
  }
  return s + "]";
}

bool dims::operator==(const dims& other) const {
  if (rank_ != other.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (values_[i] != other.values_[i]) return false;
  return true;
}

dims contiguous_strides(const dims& shape) {
  dims strides = shape;
  int64_t s = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

tensor tensor::empty(dtype type, const dims& shape) {
  for (int i = 0; i < shape.rank(); ++i)
    DSV4_CHECK(shape[i] >= 0, "negative dimension in shape {}", shape.str());
  tensor t;
  const size_t bytes = dtype_bytes(type, shape.numel());
  const size_t padded = (bytes + 63) / 64 * 64 + 64;
  void* p = std::aligned_alloc(64, padded);
  DSV4_CHECK(p != nullptr, "out of host memory allocating {} bytes", padded);
  t.storage_ = std::shared_ptr<void>(p, std::free);
  t.view_.data = p;
  t.view_.type = type;
  t.view_.shape = shape;
  t.view_.strides = contiguous_strides(shape);
  t.view_.device = device_kind::cpu;
  return t;
}

tensor tensor::zeros(dtype type, const dims& shape) {
  tensor t = empty(type, shape);
  std::memset(t.view_.data, 0, t.bytes());
  return t;
}

tensor tensor::to_f32(const tensor_view& view) {
  DSV4_CHECK(view.device == device_kind::cpu, "to_f32 needs a host view");
  DSV4_CHECK(view.is_contiguous(), "to_f32 needs a contiguous view of shape {}", view.shape.str());
  tensor t = empty(dtype::f32, view.shape);
  convert_to_f32(view.type, view.data, t.data<float>(), view.numel());
  return t;
}

tensor tensor::wrap(std::shared_ptr<void> storage, const tensor_view& view) {
  tensor t;
  t.storage_ = std::move(storage);
  t.view_ = view;
  return t;
}

tensor tensor::reshaped(const dims& shape) const {
  DSV4_CHECK(shape.numel() == numel(), "cannot reshape {} to {}", view_.shape.str(), shape.str());
  tensor t = *this;
  t.view_.shape = shape;
  t.view_.strides = contiguous_strides(shape);
  return t;
}

}  // namespace dsv4
