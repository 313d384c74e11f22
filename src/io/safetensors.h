// safetensors: an mmap reader that validates the header without touching tensor data, and a
// writer. Format: u64 little-endian header length N, N bytes of JSON
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}}, then the data
// section; offsets are relative to the data section.
//
// Validation (every failure is a dsv4::error naming the file and, where it applies, the tensor):
// header length within the file and <= 100 MB; valid JSON object; known dtype; non-negative
// shape; (product of shape) x dtype size == end - begin; begin <= end <= data size; ranges do
// not overlap. Gaps between ranges are allowed.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"

namespace dsv4 {

struct safetensors_entry {
  std::string name;
  dtype type = dtype::f32;
  dims shape;
  uint64_t begin = 0;  // byte offsets into the data section
  uint64_t end = 0;
};

struct safetensors_header {
  std::vector<safetensors_entry> entries;  // in file order of data_offsets
  std::map<std::string, std::string> metadata;
  uint64_t data_offset = 0;  // absolute file offset of the data section (8 + N)
};

// Parses and validates a header given the first bytes of a file. `file_size` is the whole file's
// size; `context` (usually the path) prefixes error messages. Used by the reader and the fuzzer.
safetensors_header parse_safetensors_header(const uint8_t* bytes, size_t available,
                                            uint64_t file_size, const std::string& context);

class safetensors_file {
 public:
  // Maps the file read-only and parses its header; tensor data is not read.
  static std::shared_ptr<safetensors_file> open(const std::string& path);
  ~safetensors_file();
  safetensors_file(const safetensors_file&) = delete;
  safetensors_file& operator=(const safetensors_file&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<safetensors_entry>& entries() const { return header_.entries; }
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
  const safetensors_entry* find(std::string_view name) const;  // nullptr if absent
  // Host view into the mapping (read-only memory; do not write through it).
  tensor_view view(const safetensors_entry& entry) const;

 private:
  safetensors_file() = default;
  std::string path_;
  safetensors_header header_;
  std::map<std::string, size_t, std::less<>> index_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
};

// Collects tensors (copied at add time) and writes one safetensors file. Tensors are written in
// the order added, each 8-byte aligned, metadata as given.
class safetensors_writer {
 public:
  void add(const std::string& name, const tensor_view& view);  // host, contiguous
  void set_metadata(const std::string& key, const std::string& value);
  void write(const std::string& path) const;

 private:
  struct item {
    std::string name;
    dtype type;
    dims shape;
    std::vector<uint8_t> bytes;
  };
  std::vector<item> items_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace dsv4
