#include "io/checkpoint.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"

namespace dsv4 {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view k_single_file = "model.safetensors";
constexpr std::string_view k_index_file = "model.safetensors.index.json";

using weight_map = std::vector<std::pair<std::string, std::string>>;

// Collects `weight_map` (tensor name -> shard file) of an index by SAX events: a release index
// lists ~70k tensors, and a JSON document for it costs as much as all shard headers together.
// Everything outside weight_map is skipped.
class weight_map_sax {
 public:
  explicit weight_map_sax(weight_map& out) : out_(out) {}

  bool null() { return scalar("null"); }
  bool boolean(bool) { return scalar("a boolean"); }
  bool number_integer(int64_t) { return scalar("a number"); }
  bool number_unsigned(uint64_t) { return scalar("a number"); }
  bool number_float(double, const std::string&) { return scalar("a number"); }
  bool binary(nlohmann::json::binary_t&) { return scalar("binary"); }
  bool string(std::string& v) {
    if (in_map()) out_.emplace_back(std::move(key_), std::move(v));
    return true;
  }
  bool start_object(size_t) {
    if (depth_ == 0) root_is_object_ = true;
    if (depth_ == 1 && top_key_ == "weight_map") found_ = true, map_depth_ = 2;
    ++depth_;
    return !in_map_value_container();
  }
  bool start_array(size_t) {
    if (depth_ == 1 && top_key_ == "weight_map") return fault("weight_map is not an object");
    ++depth_;
    return !in_map_value_container();
  }
  bool end_object() {
    --depth_;
    return true;
  }
  bool end_array() {
    --depth_;
    return true;
  }
  bool key(std::string& k) {
    if (depth_ == 1) top_key_ = k;
    if (in_map()) key_ = std::move(k);
    return true;
  }
  bool parse_error(size_t position, const std::string&, const nlohmann::detail::exception&) {
    return fault(fmt::format("invalid JSON near byte {}", position));
  }

  // Empty when the index was well formed.
  std::string problem() const {
    if (!fault_.empty()) return fault_;
    if (!root_is_object_) return "not a JSON object";
    if (!found_) return "missing weight_map";
    return {};
  }

 private:
  bool in_map() const { return map_depth_ == 2 && depth_ == 2 && top_key_ == "weight_map"; }
  bool in_map_value_container() {
    if (map_depth_ == 2 && depth_ == 3 && top_key_ == "weight_map")
      return !fault(fmt::format("tensor {}: shard is not a string", key_));
    return false;
  }
  bool scalar(std::string_view what) {
    if (depth_ == 1 && top_key_ == "weight_map") return fault("weight_map is not an object");
    if (in_map()) return fault(fmt::format("tensor {}: shard is {}, not a string", key_, what));
    return true;
  }
  bool fault(std::string what) {
    if (fault_.empty()) fault_ = std::move(what);
    return false;
  }

  weight_map& out_;
  int depth_ = 0;
  int map_depth_ = 0;
  bool root_is_object_ = false;
  bool found_ = false;
  std::string top_key_;
  std::string key_;
  std::string fault_;
};

weight_map read_weight_map(const fs::path& index_path) {
  std::ifstream in(index_path, std::ios::binary);
  DSV4_CHECK(in.good(), "checkpoint index {}: cannot open", index_path.string());
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  weight_map map;
  weight_map_sax sax(map);
  nlohmann::json::sax_parse(text, &sax);
  const std::string problem = sax.problem();
  DSV4_CHECK(problem.empty(), "checkpoint index {}: {}", index_path.string(), problem);
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

// Opens the shards in parallel: header parsing dominates opening a large checkpoint, and shards
// are independent. The first failure in shard order is rethrown, so errors are deterministic.
std::vector<std::shared_ptr<safetensors_file>> open_all(const fs::path& root,
                                                        const std::vector<std::string>& names) {
  std::vector<std::shared_ptr<safetensors_file>> files(names.size());
  std::vector<std::exception_ptr> errors(names.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < names.size();) {
      try {
        files[i] = safetensors_file::open((root / names[i]).string());
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const size_t threads =
      std::min<size_t>({names.size(), std::max(1u, std::thread::hardware_concurrency()), 16});
  std::vector<std::thread> workers;
  for (size_t t = 1; t < threads; ++t) workers.emplace_back(work);
  work();
  for (auto& w : workers) w.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
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
  weight_map listed;
  const fs::path index_path = root / k_index_file;
  const bool has_index = fs::exists(index_path, ec);
  if (has_index) {
    listed = read_weight_map(index_path);
    std::unordered_set<std::string_view> seen;
    for (const auto& [name, shard] : listed) {
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

  ckpt.files_ = open_all(root, shard_names);
  std::unordered_map<std::string_view, const safetensors_file*> file_of_shard;
  for (size_t i = 0; i < shard_names.size(); ++i)
    file_of_shard.emplace(shard_names[i], ckpt.files_[i].get());

  for (const auto& f : ckpt.files_) {
    for (const auto& entry : f->entries()) {
      const auto [it, inserted] =
          ckpt.tensors_.try_emplace(entry.name, checkpoint_tensor{f.get(), &entry});
      DSV4_CHECK(inserted, "checkpoint {}: tensor {} is in both {} and {}", dir, entry.name,
                 it->second.file->path(), f->path());
    }
  }

  // Every index entry must be in the shard it names (and, by the check above, only there).
  for (const auto& [name, shard] : listed) {
    const auto it = ckpt.tensors_.find(name);
    const safetensors_file* expected = file_of_shard.at(shard);
    DSV4_CHECK(it != ckpt.tensors_.end(),
               "checkpoint {}: tensor {} listed in {} is missing from shard {}", dir, name,
               k_index_file, expected->path());
    DSV4_CHECK(it->second.file == expected,
               "checkpoint {}: tensor {} is listed in {} for {} but stored in {}", dir, name,
               k_index_file, expected->path(), it->second.file->path());
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
