#include "io/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.h"

namespace dsv4 {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view k_single_file = "model.safetensors";
constexpr std::string_view k_index_file = "model.safetensors.index.json";

// weight_map of an index: tensor name -> shard file name (relative to the directory).
std::map<std::string, std::string> read_weight_map(const fs::path& index_path) {
  std::ifstream in(index_path, std::ios::binary);
  DSV4_CHECK(in.good(), "checkpoint index {}: cannot open", index_path.string());
  std::stringstream buffer;
  buffer << in.rdbuf();
  const auto root = nlohmann::json::parse(buffer.str(), nullptr, /*allow_exceptions=*/false);
  DSV4_CHECK(!root.is_discarded() && root.is_object(), "checkpoint index {}: not a JSON object",
             index_path.string());
  const auto it = root.find("weight_map");
  DSV4_CHECK(it != root.end() && it->is_object(),
             "checkpoint index {}: missing or non-object weight_map", index_path.string());
  std::map<std::string, std::string> map;
  for (const auto& [name, file] : it->items()) {
    DSV4_CHECK(file.is_string(), "checkpoint index {}: tensor {}: shard is not a string",
               index_path.string(), name);
    map.emplace(name, file.get<std::string>());
  }
  return map;
}

std::vector<std::string> all_safetensors_files(const fs::path& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".safetensors" && it->is_regular_file(ec))
      files.push_back(it->path().filename().string());
  DSV4_CHECK(!ec, "checkpoint {}: cannot list the directory: {}", dir.string(), ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

checkpoint checkpoint::open(const std::string& dir) {
  checkpoint ckpt;
  ckpt.dir_ = dir;
  const fs::path root(dir);
  std::error_code ec;
  DSV4_CHECK(fs::is_directory(root, ec), "checkpoint {}: not a directory", dir);

  // Shard file names to open, in order; for an index, the tensor that first named each shard.
  std::vector<std::string> shard_names;
  std::map<std::string, std::string> weight_map;
  const fs::path index_path = root / k_index_file;
  const bool has_index = fs::exists(index_path, ec);
  if (has_index) {
    weight_map = read_weight_map(index_path);
    std::set<std::string> seen;
    for (const auto& [name, shard] : weight_map) {
      if (!seen.insert(shard).second) continue;
      DSV4_CHECK(fs::is_regular_file(root / shard, ec),
                 "checkpoint {}: shard {} (holding tensor {}) is missing", dir, shard, name);
      shard_names.push_back(shard);
    }
    std::sort(shard_names.begin(), shard_names.end());
  } else if (fs::is_regular_file(root / k_single_file, ec)) {
    shard_names.emplace_back(k_single_file);
  } else {
    shard_names = all_safetensors_files(root);
    DSV4_CHECK(!shard_names.empty(), "checkpoint {}: no {}, {} or *.safetensors files", dir,
               k_index_file, k_single_file);
  }

  for (const auto& shard : shard_names) {
    ckpt.files_.push_back(safetensors_file::open((root / shard).string()));
    const safetensors_file* file = ckpt.files_.back().get();
    for (const auto& entry : file->entries()) {
      const auto [it, inserted] =
          ckpt.tensors_.try_emplace(entry.name, checkpoint_tensor{file, &entry});
      DSV4_CHECK(inserted, "checkpoint {}: tensor {} is in both {} and {}", dir, entry.name,
                 it->second.file->path(), file->path());
    }
  }

  // Every index entry must be in the shard it names (and, by the check above, only there).
  for (const auto& [name, shard] : weight_map) {
    const auto it = ckpt.tensors_.find(name);
    DSV4_CHECK(it != ckpt.tensors_.end(),
               "checkpoint {}: tensor {} listed in {} is missing from shard {}", dir, name,
               k_index_file, (root / shard).string());
    const std::string expected = (root / shard).string();
    DSV4_CHECK(it->second.file->path() == expected,
               "checkpoint {}: tensor {} is listed in {} for {} but stored in {}", dir, name,
               k_index_file, expected, it->second.file->path());
  }
  return ckpt;
}

checkpoint_tensor checkpoint::find(std::string_view name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? checkpoint_tensor{} : it->second;
}

tensor_view checkpoint::view(std::string_view name) const {
  const checkpoint_tensor t = find(name);
  DSV4_CHECK(t.entry != nullptr, "checkpoint {}: missing tensor {}", dir_, name);
  return t.file->view(*t.entry);
}

std::vector<std::string> checkpoint::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& [name, t] : tensors_) out.push_back(name);
  return out;
}

uint64_t checkpoint::total_bytes() const {
  uint64_t total = 0;
  for (const auto& [name, t] : tensors_) total += t.entry->end - t.entry->begin;
  return total;
}

}  // namespace dsv4
