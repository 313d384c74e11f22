#include "io/safetensors_stream_writer.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace dsv4 {

safetensors_stream_writer::safetensors_stream_writer(
    std::string path, std::vector<safetensors_decl> tensors,
    const std::map<std::string, std::string>& metadata)
    : path_(std::move(path)), tensors_(std::move(tensors)) {
  nlohmann::json root = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    DSV4_CHECK(!root.contains(t.name), "safetensors {}: tensor {} declared twice", path_, t.name);
    offset = (offset + 7) / 8 * 8;
    const uint64_t size = dtype_bytes(t.type, t.shape.numel());
    begins_.push_back(offset);
    sizes_.push_back(size);
    root[t.name] = {{"dtype", std::string(dtype_name(t.type))},
                    {"shape", t.shape.to_vector()},
                    {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  if (!metadata.empty()) root["__metadata__"] = metadata;
  std::string text = root.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  file_size_ = 8 + text.size() + offset;

  file_ = std::fopen(path_.c_str(), "wb");
  if (file_ == nullptr) fail("safetensors {}: cannot create: {}", path_, std::strerror(errno));
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
  const bool ok = std::fwrite(len, 1, 8, file_) == 8 &&
                  std::fwrite(text.data(), 1, text.size(), file_) == text.size();
  if (!ok) {
    std::fclose(file_);
    file_ = nullptr;
    std::filesystem::remove(path_);
    fail("safetensors {}: write failed: {}", path_, std::strerror(errno));
  }
  advance();
}

safetensors_stream_writer::~safetensors_stream_writer() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
}

void safetensors_stream_writer::advance() {
  while (current_ < tensors_.size() && written_ == sizes_[current_]) {
    ++current_;
    written_ = 0;
  }
  if (current_ < tensors_.size() && written_ == 0 && position_ < begins_[current_]) {
    static const uint8_t zeros[8] = {};
    const size_t pad = size_t(begins_[current_] - position_);
    if (std::fwrite(zeros, 1, pad, file_) != pad)
      fail("safetensors {}: write failed: {}", path_, std::strerror(errno));
    position_ += pad;
  }
}

void safetensors_stream_writer::write(const void* data, size_t bytes) {
  if (bytes == 0) return;
  DSV4_CHECK(file_ != nullptr, "safetensors {}: write after finish", path_);
  DSV4_CHECK(current_ < tensors_.size() && written_ + bytes <= sizes_[current_],
             "safetensors {}: {} bytes written past the end of tensor {}", path_, bytes,
             current_ < tensors_.size() ? tensors_[current_].name : std::string("(none)"));
  if (std::fwrite(data, 1, bytes, file_) != bytes)
    fail("safetensors {}: write failed ({}): {}", path_, tensors_[current_].name,
         std::strerror(errno));
  written_ += bytes;
  position_ += bytes;
  advance();
}

void safetensors_stream_writer::finish() {
  DSV4_CHECK(file_ != nullptr, "safetensors {}: finished twice", path_);
  DSV4_CHECK(current_ == tensors_.size(), "safetensors {}: tensor {} incomplete ({} of {} bytes)",
             path_, current_ < tensors_.size() ? tensors_[current_].name : std::string(), written_,
             current_ < sizes_.size() ? sizes_[current_] : 0);
  const bool ok = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok) {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
    fail("safetensors {}: write failed at close: {}", path_, std::strerror(errno));
  }
}

}  // namespace dsv4
