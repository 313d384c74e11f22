// A model directory: config.json plus either model.safetensors or shards listed by
// model.safetensors.index.json ({"metadata": {...}, "weight_map": {tensor: shard file}}).
// Opening reads headers only. A tensor named in the index but missing from its shard, a shard
// missing from disk, or a name present in two shards is an error naming file and tensor.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/safetensors.h"

namespace dsv4 {

struct checkpoint_tensor {
  const safetensors_file* file = nullptr;
  const safetensors_entry* entry = nullptr;
};

class checkpoint {
 public:
  static checkpoint open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  bool has(std::string_view name) const { return find(name).entry != nullptr; }
  checkpoint_tensor find(std::string_view name) const;  // {nullptr, nullptr} if absent
  // Host view of a tensor; throws "checkpoint DIR: missing tensor NAME" if absent.
  tensor_view view(std::string_view name) const;
  std::vector<std::string> names() const;  // sorted
  const std::vector<std::shared_ptr<safetensors_file>>& files() const { return files_; }
  uint64_t total_bytes() const;  // sum of tensor byte ranges

 private:
  std::string dir_;
  std::vector<std::shared_ptr<safetensors_file>> files_;
  std::map<std::string, checkpoint_tensor, std::less<>> tensors_;
};

}  // namespace dsv4
