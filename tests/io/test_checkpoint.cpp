// checkpoint directories: single file, sharded through an index, bare shard sets, and every
// inconsistency between index and shards (each error names the file and the tensor).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/checkpoint.h"

namespace dsv4 {
namespace {

namespace fs = std::filesystem;

class checkpoint_test : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "dsv4_checkpoint_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (fs::path(dir_) / name).string(); }

  // A shard holding f32 tensors `names`, tensor i of length i + 1 filled with `fill` + i.
  void write_shard(const std::string& file, const std::vector<std::string>& names, float fill) {
    safetensors_writer w;
    for (size_t i = 0; i < names.size(); ++i) {
      tensor t = tensor::empty(dtype::f32, {int64_t(i + 1)});
      for (size_t k = 0; k <= i; ++k) t.data<float>()[k] = fill + float(i);
      w.add(names[i], t.view());
    }
    w.write(path(file));
  }

  void write_index(const std::map<std::string, std::string>& weight_map) {
    nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}};
    std::ofstream(path("model.safetensors.index.json")) << index.dump(1);
  }

  // checkpoint::open throws a dsv4::error mentioning every fragment.
  void expect_open_error(std::initializer_list<std::string> fragments) {
    try {
      checkpoint::open(dir_);
      ADD_FAILURE() << "no error";
    } catch (const error& e) {
      const std::string message = e.what();
      for (const auto& f : fragments)
        EXPECT_NE(message.find(f), std::string::npos) << "'" << f << "' not in: " << message;
    }
  }

  std::string dir_;
};

float first_value(const checkpoint& c, const std::string& name) {
  return c.view(name).ptr<const float>()[0];
}

TEST_F(checkpoint_test, single_file) {
  write_shard("model.safetensors", {"a", "b"}, 10.0f);
  // A stray shard beside model.safetensors is not part of the model.
  write_shard("other.safetensors", {"z"}, 0.0f);
  const checkpoint c = checkpoint::open(dir_);
  EXPECT_EQ(c.dir(), dir_);
  EXPECT_EQ(c.names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c.files().size(), 1u);
  EXPECT_TRUE(c.has("a"));
  EXPECT_FALSE(c.has("z"));
  EXPECT_EQ(first_value(c, "b"), 11.0f);
  EXPECT_EQ(c.total_bytes(), (1 + 2) * 4u);
}

TEST_F(checkpoint_test, sharded_with_index) {
  write_shard("model-00001-of-00002.safetensors", {"layers.0.w", "embed.weight"}, 1.0f);
  write_shard("model-00002-of-00002.safetensors", {"layers.1.w", "head.weight", "norm"}, 5.0f);
  write_index({{"layers.0.w", "model-00001-of-00002.safetensors"},
               {"embed.weight", "model-00001-of-00002.safetensors"},
               {"layers.1.w", "model-00002-of-00002.safetensors"},
               {"head.weight", "model-00002-of-00002.safetensors"},
               {"norm", "model-00002-of-00002.safetensors"}});
  const checkpoint c = checkpoint::open(dir_);
  EXPECT_EQ(c.files().size(), 2u);
  EXPECT_EQ(c.names(), (std::vector<std::string>{"embed.weight", "head.weight", "layers.0.w",
                                                 "layers.1.w", "norm"}));
  EXPECT_EQ(first_value(c, "layers.0.w"), 1.0f);
  EXPECT_EQ(first_value(c, "embed.weight"), 2.0f);
  EXPECT_EQ(first_value(c, "norm"), 7.0f);
  const checkpoint_tensor t = c.find("head.weight");
  ASSERT_NE(t.file, nullptr);
  EXPECT_EQ(t.file->path(), path("model-00002-of-00002.safetensors"));
  EXPECT_EQ(t.entry->shape, dims{2});
  EXPECT_EQ(c.find("absent").entry, nullptr);
  EXPECT_EQ(c.total_bytes(), (1 + 2 + 1 + 2 + 3) * 4u);
}

TEST_F(checkpoint_test, shards_without_index_are_all_opened) {
  write_shard("b.safetensors", {"y"}, 2.0f);
  write_shard("a.safetensors", {"x"}, 1.0f);
  std::ofstream(path("notes.txt")) << "not a shard";
  const checkpoint c = checkpoint::open(dir_);
  ASSERT_EQ(c.files().size(), 2u);
  EXPECT_EQ(c.files()[0]->path(), path("a.safetensors"));
  EXPECT_EQ(c.names(), (std::vector<std::string>{"x", "y"}));
}

TEST_F(checkpoint_test, missing_directory_or_files) {
  const std::string missing = path("nope");
  try {
    checkpoint::open(missing);
    ADD_FAILURE();
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  expect_open_error({dir_, "safetensors"});  // empty directory
}

TEST_F(checkpoint_test, missing_shard) {
  write_shard("s1.safetensors", {"a"}, 0.0f);
  write_index({{"a", "s1.safetensors"}, {"b", "s2.safetensors"}});
  expect_open_error({dir_, "s2.safetensors", "tensor b"});
}

TEST_F(checkpoint_test, tensor_in_index_missing_from_shard) {
  write_shard("s1.safetensors", {"a"}, 0.0f);
  write_index({{"a", "s1.safetensors"}, {"ghost", "s1.safetensors"}});
  expect_open_error({"ghost", "s1.safetensors"});
}

TEST_F(checkpoint_test, tensor_stored_in_another_shard_than_listed) {
  write_shard("s1.safetensors", {"a"}, 0.0f);
  write_shard("s2.safetensors", {"b"}, 0.0f);
  write_index({{"a", "s2.safetensors"}, {"b", "s2.safetensors"}, {"c", "s1.safetensors"}});
  expect_open_error({"tensor a", "s1.safetensors", "s2.safetensors"});
}

TEST_F(checkpoint_test, duplicate_tensor_across_shards) {
  write_shard("s1.safetensors", {"a", "dup"}, 0.0f);
  write_shard("s2.safetensors", {"dup"}, 0.0f);
  write_index({{"a", "s1.safetensors"}, {"dup", "s2.safetensors"}});
  expect_open_error({"dup", "s1.safetensors", "s2.safetensors"});
  // Without an index as well.
  fs::remove(path("model.safetensors.index.json"));
  expect_open_error({"dup", "s1.safetensors", "s2.safetensors"});
}

TEST_F(checkpoint_test, bad_index) {
  write_shard("s1.safetensors", {"a"}, 0.0f);
  std::ofstream(path("model.safetensors.index.json")) << "{\"weight_map\": [";
  expect_open_error({"model.safetensors.index.json"});
  std::ofstream(path("model.safetensors.index.json")) << R"({"weight_map": {"a": 3}})";
  expect_open_error({"model.safetensors.index.json", "tensor a"});
}

TEST_F(checkpoint_test, bad_shard_names_its_file) {
  std::ofstream(path("model.safetensors")) << "garbage that is no safetensors header";
  expect_open_error({path("model.safetensors")});
}

TEST_F(checkpoint_test, view_of_missing_tensor) {
  write_shard("model.safetensors", {"a"}, 0.0f);
  const checkpoint c = checkpoint::open(dir_);
  try {
    c.view("layers.9.w");
    ADD_FAILURE();
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("missing tensor layers.9.w"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find(dir_), std::string::npos);
  }
}

}  // namespace
}  // namespace dsv4
