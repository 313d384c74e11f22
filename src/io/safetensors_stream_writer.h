// Writes one safetensors file without holding its data in memory: the tensor list (names, dtypes,
// shapes) is declared up front, so the header and every data offset are known before any data;
// then each tensor's bytes are appended in declaration order. Layout matches safetensors_writer
// (tensors 8-byte aligned, header padded with spaces to a multiple of 8).
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace dsv4 {

struct safetensors_decl {
  std::string name;
  dtype type = dtype::f32;
  dims shape;
};

class safetensors_stream_writer {
 public:
  // Creates `path` and writes the header; throws dsv4::error naming the path on failure.
  safetensors_stream_writer(std::string path, std::vector<safetensors_decl> tensors,
                            const std::map<std::string, std::string>& metadata = {});
  // Closes without finishing (an unfinished file is removed: it would not parse).
  ~safetensors_stream_writer();
  safetensors_stream_writer(const safetensors_stream_writer&) = delete;
  safetensors_stream_writer& operator=(const safetensors_stream_writer&) = delete;

  // Appends bytes to the current tensor; a write may not cross into the next tensor, so callers
  // fill tensors one after another. Throws if more bytes are given than the tensor holds.
  void write(const void* data, size_t bytes);
  // Index of the tensor the next write goes to (tensors().size() when all are complete).
  size_t current() const { return current_; }
  const std::vector<safetensors_decl>& tensors() const { return tensors_; }
  // Checks that every tensor is complete and closes the file.
  void finish();
  uint64_t file_size() const { return file_size_; }

 private:
  void advance();  // skips complete (and empty) tensors, writing alignment padding
  std::string path_;
  std::vector<safetensors_decl> tensors_;
  std::vector<uint64_t> begins_;
  std::vector<uint64_t> sizes_;
  std::FILE* file_ = nullptr;
  size_t current_ = 0;
  uint64_t written_ = 0;   // bytes of the current tensor written so far
  uint64_t position_ = 0;  // offset in the data section
  uint64_t file_size_ = 0;
};

}  // namespace dsv4
