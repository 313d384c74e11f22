// Tensor views and owning host tensors.
//
// A tensor_view is (pointer, dtype, shape, strides, device): it never owns memory. Strides are in
// elements, row-major by default. e2m1 views must be contiguous in their last dimension, with an
// even size there (two elements per byte).
// A tensor owns a host buffer (64-byte aligned) and exposes a view; device buffers are owned by
// the backends.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace dsv4 {

enum class device_kind : uint8_t { cpu, cuda };

constexpr int k_max_rank = 6;

// A small fixed-capacity shape (or stride) vector.
class dims {
 public:
  dims() = default;
  dims(std::initializer_list<int64_t> values);
  explicit dims(const std::vector<int64_t>& values);

  int rank() const { return rank_; }
  int64_t operator[](int i) const { return values_[i]; }
  int64_t& operator[](int i) { return values_[i]; }
  int64_t numel() const;  // product of all entries (1 for rank 0)
  std::vector<int64_t> to_vector() const { return {values_.begin(), values_.begin() + rank_}; }
  std::string str() const;  // "[a, b, c]"
  bool operator==(const dims& other) const;
  bool operator!=(const dims& other) const { return !(*this == other); }

 private:
  std::array<int64_t, k_max_rank> values_{};
  int rank_ = 0;
};

dims contiguous_strides(const dims& shape);

struct tensor_view {
  void* data = nullptr;
  dtype type = dtype::f32;
  dims shape;
  dims strides;  // in elements
  device_kind device = device_kind::cpu;

  int rank() const { return shape.rank(); }
  int64_t numel() const { return shape.numel(); }
  int64_t size(int dim) const { return shape[dim < 0 ? dim + rank() : dim]; }
  bool is_contiguous() const { return strides == contiguous_strides(shape); }
  size_t bytes() const { return dtype_bytes(type, numel()); }  // valid for contiguous views

  template <typename T>
  T* ptr() const {
    return static_cast<T*>(data);
  }
};

// Owning, contiguous host tensor.
class tensor {
 public:
  tensor() = default;
  static tensor empty(dtype type, const dims& shape);
  static tensor zeros(dtype type, const dims& shape);
  // Contiguous copy of the values of `view` (host) converted to f32.
  static tensor to_f32(const tensor_view& view);
  // A tensor over memory owned elsewhere (e.g. a device allocation): `storage` keeps it alive,
  // `view` describes it.
  static tensor wrap(std::shared_ptr<void> storage, const tensor_view& view);

  const tensor_view& view() const { return view_; }
  tensor_view& view() { return view_; }
  dtype type() const { return view_.type; }
  const dims& shape() const { return view_.shape; }
  int64_t size(int dim) const { return view_.size(dim); }
  int64_t numel() const { return view_.numel(); }
  size_t bytes() const { return view_.bytes(); }
  bool defined() const { return storage_ != nullptr; }

  template <typename T>
  T* data() {
    return static_cast<T*>(view_.data);
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(view_.data);
  }

  // Same storage, new shape of equal element count.
  tensor reshaped(const dims& shape) const;

 private:
  std::shared_ptr<void> storage_;
  tensor_view view_;
};

}  // namespace dsv4
