// safetensors reader/writer: round trips for every dtype, every validation failure (each must
// be a dsv4::error naming the file and tensor), and a mutation sweep over the header parser.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "io/safetensors.h"

namespace dsv4 {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string make_temp_dir() {
  std::string pattern = (fs::temp_directory_path() / "dsv4_safetensors_XXXXXX").string();
  EXPECT_NE(mkdtemp(pattern.data()), nullptr);
  return pattern;
}

class safetensors_test : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = make_temp_dir(); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  std::string dir_;
};

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_all(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

// A file built by hand (independent of the writer): u64 LE length, header text, data bytes.
std::vector<uint8_t> raw_file(const std::string& header, size_t data_bytes, uint64_t length) {
  std::vector<uint8_t> bytes(8 + header.size() + data_bytes);
  for (int i = 0; i < 8; ++i) bytes[i] = uint8_t(length >> (8 * i));
  for (size_t i = 0; i < header.size(); ++i) bytes[8 + i] = uint8_t(header[i]);
  for (size_t i = 0; i < data_bytes; ++i) bytes[8 + header.size() + i] = uint8_t(i * 7 + 1);
  return bytes;
}

std::vector<uint8_t> raw_file(const std::string& header, size_t data_bytes) {
  return raw_file(header, data_bytes, header.size());
}

// Opening `bytes` written to `file` throws a dsv4::error containing the path and every one of
// `fragments`.
void expect_open_error(const std::string& file, const std::vector<uint8_t>& bytes,
                       std::initializer_list<std::string_view> fragments) {
  write_all(file, bytes);
  try {
    safetensors_file::open(file);
    ADD_FAILURE() << "no error for " << file;
  } catch (const error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(file), std::string::npos) << message;
    for (std::string_view f : fragments)
      EXPECT_NE(message.find(f), std::string::npos) << "'" << f << "' not in: " << message;
  }
}

struct dtype_case {
  dtype type;
  std::string_view name;  // the safetensors spelling, from the format's documentation
  int bits;
};

const dtype_case k_dtypes[] = {
    {dtype::f32, "F32", 32},        {dtype::f16, "F16", 16},        {dtype::bf16, "BF16", 16},
    {dtype::f8_e4m3, "F8_E4M3", 8}, {dtype::f8_e8m0, "F8_E8M0", 8}, {dtype::e2m1, "F4", 4},
    {dtype::i8, "I8", 8},           {dtype::u8, "U8", 8},           {dtype::i32, "I32", 32},
    {dtype::i64, "I64", 64},        {dtype::f64, "F64", 64},        {dtype::boolean, "BOOL", 8},
};

TEST_F(safetensors_test, round_trip_every_dtype) {
  std::mt19937 rng(1234);
  safetensors_writer writer;
  std::vector<tensor> sources;
  // Odd shapes make unaligned byte sizes, so the writer's 8-byte padding is exercised.
  const dims shape{3, 6};
  for (const auto& c : k_dtypes) {
    tensor t = tensor::empty(c.type, shape);
    auto* p = t.data<uint8_t>();
    for (size_t i = 0; i < t.bytes(); ++i) p[i] = uint8_t(rng());
    writer.add(std::string(c.name) + "_tensor", t.view());
    sources.push_back(std::move(t));
  }
  writer.set_metadata("format", "pt");
  writer.set_metadata("note", "x");
  const std::string file = path("all.safetensors");
  writer.write(file);

  // The on-disk header, read with plain JSON: names, alignment and padding.
  const auto bytes = read_all(file);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  EXPECT_EQ(n % 8, 0u);
  const json header = json::parse(bytes.begin() + 8, bytes.begin() + 8 + long(n));
  for (const auto& c : k_dtypes) {
    const auto& h = header.at(std::string(c.name) + "_tensor");
    EXPECT_EQ(h.at("dtype"), c.name);
    EXPECT_EQ(h.at("data_offsets")[0].get<uint64_t>() % 8, 0u);
    EXPECT_EQ(h.at("data_offsets")[1].get<uint64_t>() - h.at("data_offsets")[0].get<uint64_t>(),
              uint64_t(shape.numel() * c.bits / 8));
  }

  const auto f = safetensors_file::open(file);
  EXPECT_EQ(f->entries().size(), std::size(k_dtypes));
  EXPECT_EQ(f->metadata().at("format"), "pt");
  EXPECT_EQ(f->metadata().at("note"), "x");
  for (size_t i = 0; i < std::size(k_dtypes); ++i) {
    const auto* e = f->find(std::string(k_dtypes[i].name) + "_tensor");
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->type, k_dtypes[i].type);
    EXPECT_EQ(e->shape, shape);
    const tensor_view v = f->view(*e);
    EXPECT_EQ(v.type, k_dtypes[i].type);
    EXPECT_TRUE(v.is_contiguous());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data) % 8, 0u);
    ASSERT_EQ(v.bytes(), sources[i].bytes());
    EXPECT_EQ(std::memcmp(v.data, sources[i].data<uint8_t>(), v.bytes()), 0) << k_dtypes[i].name;
  }
  EXPECT_EQ(f->find("absent"), nullptr);
  // Entries come sorted by offset.
  for (size_t i = 1; i < f->entries().size(); ++i)
    EXPECT_LT(f->entries()[i - 1].begin, f->entries()[i].begin);
}

TEST_F(safetensors_test, scalar_empty_and_no_tensors) {
  safetensors_writer writer;
  tensor scalar = tensor::empty(dtype::f32, dims{});
  *scalar.data<float>() = 2.5f;
  writer.add("scalar", scalar.view());
  writer.add("empty", tensor::empty(dtype::bf16, {0, 4}).view());
  writer.write(path("a.safetensors"));
  const auto f = safetensors_file::open(path("a.safetensors"));
  const auto* s = f->find("scalar");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->shape.rank(), 0);
  EXPECT_EQ(*f->view(*s).ptr<float>(), 2.5f);
  const auto* e = f->find("empty");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->begin, e->end);
  EXPECT_EQ(f->view(*e).numel(), 0);

  safetensors_writer none;
  none.write(path("none.safetensors"));
  EXPECT_TRUE(safetensors_file::open(path("none.safetensors"))->entries().empty());
  // An empty data section is valid too when built by hand.
  write_all(path("hand.safetensors"), raw_file("{}", 0));
  EXPECT_TRUE(safetensors_file::open(path("hand.safetensors"))->entries().empty());
}

TEST_F(safetensors_test, gaps_between_ranges_are_allowed) {
  const std::string header = R"({"b":{"dtype":"U8","shape":[2],"data_offsets":[6,8]},)"
                             R"("a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})";
  write_all(path("gap.safetensors"), raw_file(header, 8));
  const auto f = safetensors_file::open(path("gap.safetensors"));
  ASSERT_EQ(f->entries().size(), 2u);
  EXPECT_EQ(f->entries()[0].name, "a");  // file order of offsets, not of JSON keys
  // raw_file fills data byte i with i*7+1.
  EXPECT_EQ(f->view(*f->find("b")).ptr<uint8_t>()[1], uint8_t(7 * 7 + 1));
}

TEST_F(safetensors_test, parse_needs_only_the_header_bytes) {
  const std::string header = R"({"w":{"dtype":"F32","shape":[1000],"data_offsets":[0,4000]}})";
  const auto bytes = raw_file(header, 0);
  // Only 8 + N bytes are given; the file is claimed to hold the 4000 data bytes beyond them.
  const auto h = parse_safetensors_header(bytes.data(), bytes.size(), bytes.size() + 4000, "ctx");
  ASSERT_EQ(h.entries.size(), 1u);
  EXPECT_EQ(h.data_offset, 8 + header.size());
  EXPECT_EQ(h.entries[0].end, 4000u);
  EXPECT_THROW(parse_safetensors_header(bytes.data(), bytes.size(), bytes.size() + 3999, "ctx"),
               error);
}

TEST_F(safetensors_test, truncated_file) {
  safetensors_writer writer;
  writer.add("weights", tensor::zeros(dtype::f32, {16}).view());
  writer.write(path("full.safetensors"));
  auto bytes = read_all(path("full.safetensors"));
  bytes.resize(bytes.size() - 4);
  expect_open_error(path("cut_data.safetensors"), bytes, {"tensor weights", "exceed"});
  expect_open_error(path("cut_header.safetensors"),
                    std::vector<uint8_t>(bytes.begin(), bytes.begin() + 20), {"header length"});
  expect_open_error(path("tiny.safetensors"), {1, 2, 3}, {"too small"});
  expect_open_error(path("zero.safetensors"), {}, {"too small"});
}

TEST_F(safetensors_test, header_length_beyond_file_or_bound) {
  const std::string header = "{}";
  expect_open_error(path("beyond.safetensors"), raw_file(header, 0, 3), {"header length 3"});
  expect_open_error(path("huge.safetensors"), raw_file(header, 0, uint64_t(1) << 40), {"exceeds"});
  expect_open_error(path("bound.safetensors"), raw_file(header, 0, 100'000'001), {"exceeds"});
}

TEST_F(safetensors_test, bad_json) {
  expect_open_error(path("syntax.safetensors"), raw_file(R"({"a": {"dtype": )", 0),
                    {"not valid JSON"});
  expect_open_error(path("array.safetensors"), raw_file("[1, 2]", 0), {"not a JSON object"});
  expect_open_error(path("entry.safetensors"), raw_file(R"({"w": 5})", 0),
                    {"tensor w", "not a JSON object"});
  expect_open_error(path("nodtype.safetensors"),
                    raw_file(R"({"w":{"shape":[1],"data_offsets":[0,1]}})", 1),
                    {"tensor w", "dtype"});
  expect_open_error(path("noshape.safetensors"),
                    raw_file(R"({"w":{"dtype":"U8","data_offsets":[0,1]}})", 1),
                    {"tensor w", "shape"});
  expect_open_error(path("nooffsets.safetensors"),
                    raw_file(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0]}})", 1),
                    {"tensor w", "data_offsets"});
}

TEST_F(safetensors_test, unknown_dtype) {
  expect_open_error(path("dtype.safetensors"),
                    raw_file(R"({"w":{"dtype":"F7","shape":[1],"data_offsets":[0,1]}})", 1),
                    {"tensor w", "unknown dtype", "F7"});
}

TEST_F(safetensors_test, bad_shape) {
  expect_open_error(path("negative.safetensors"),
                    raw_file(R"({"w":{"dtype":"U8","shape":[-1,2],"data_offsets":[0,2]}})", 2),
                    {"tensor w", "shape"});
  expect_open_error(path("float.safetensors"),
                    raw_file(R"({"w":{"dtype":"U8","shape":[2.0],"data_offsets":[0,2]}})", 2),
                    {"tensor w", "shape"});
  expect_open_error(
      path("overflow.safetensors"),
      raw_file(R"({"w":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,2]}})", 2),
      {"tensor w", "too large"});
  expect_open_error(path("rank.safetensors"),
                    raw_file(R"({"w":{"dtype":"U8","shape":[1,1,1,1,1,1,1],)"
                             R"("data_offsets":[0,1]}})",
                             1),
                    {"tensor w", "rank"});
}

TEST_F(safetensors_test, shape_size_mismatch) {
  expect_open_error(path("size.safetensors"),
                    raw_file(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 24),
                    {"tensor w", "24 bytes"});
  // F4 counts 4 bits: 6 elements are 3 bytes, 5 elements do not fill whole bytes.
  write_all(path("f4.safetensors"),
            raw_file(R"({"w":{"dtype":"F4","shape":[2,3],"data_offsets":[0,3]}})", 3));
  EXPECT_EQ(safetensors_file::open(path("f4.safetensors"))->find("w")->end, 3u);
  expect_open_error(path("f4odd.safetensors"),
                    raw_file(R"({"w":{"dtype":"F4","shape":[5],"data_offsets":[0,3]}})", 3),
                    {"tensor w", "whole bytes"});
}

TEST_F(safetensors_test, out_of_range_offsets) {
  expect_open_error(path("end.safetensors"),
                    raw_file(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[8,12]}})", 10),
                    {"tensor w", "exceed"});
  expect_open_error(path("order.safetensors"),
                    raw_file(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[4,2]}})", 10),
                    {"tensor w", "begin after end"});
  expect_open_error(path("neg.safetensors"),
                    raw_file(R"({"w":{"dtype":"U8","shape":[2],"data_offsets":[-2,0]}})", 10),
                    {"tensor w", "data_offsets"});
}

TEST_F(safetensors_test, overlapping_ranges) {
  expect_open_error(path("overlap.safetensors"),
                    raw_file(R"({"first":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                             R"("second":{"dtype":"U8","shape":[4],"data_offsets":[3,7]}})",
                             8),
                    {"second", "first", "overlap"});
  expect_open_error(path("same.safetensors"),
                    raw_file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                             R"("b":{"dtype":"I8","shape":[4],"data_offsets":[0,4]}})",
                             8),
                    {"overlap"});
}

TEST_F(safetensors_test, repeated_tensor_name) {
  expect_open_error(path("twice.safetensors"),
                    raw_file(R"({"w":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                             R"("w":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})",
                             4),
                    {"tensor w", "twice"});
}

TEST_F(safetensors_test, bad_metadata) {
  expect_open_error(path("meta_value.safetensors"),
                    raw_file(R"({"__metadata__":{"format":"pt","n":1}})", 0),
                    {"__metadata__", "\"n\""});
  expect_open_error(path("meta_kind.safetensors"), raw_file(R"({"__metadata__":[1]})", 0),
                    {"__metadata__"});
}

TEST_F(safetensors_test, missing_file) {
  try {
    safetensors_file::open(path("absent.safetensors"));
    ADD_FAILURE();
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find(path("absent.safetensors")), std::string::npos);
  }
}

// A valid header with several entries and metadata, as the seed for mutations.
std::string seed_header() {
  return R"({"__metadata__":{"format":"pt"},)"
         R"("a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},)"
         R"("b":{"dtype":"F4","shape":[4,8],"data_offsets":[16,32]},)"
         R"("c":{"dtype":"F8_E8M0","shape":[],"data_offsets":[32,33]},)"
         R"("d":{"dtype":"I64","shape":[0,5],"data_offsets":[40,40]}})";
}

std::string mutate(std::string s, std::mt19937& rng) {
  static const std::string_view tokens[] = {"{",
                                            "}",
                                            "[",
                                            "]",
                                            ",",
                                            ":",
                                            "\"",
                                            "-1",
                                            "1e30",
                                            "18446744073709551615",
                                            "99999999999999999999999",
                                            "null",
                                            "true",
                                            "0.5",
                                            "\\u0000",
                                            "\"F4\"",
                                            "\"__metadata__\"",
                                            "\"dtype\"",
                                            "\"shape\"",
                                            "\"data_offsets\"",
                                            "[0,0]",
                                            "{}",
                                            "[]",
                                            "\xff",
                                            "\x00"};
  const int edits = rng() % 4 == 0 ? 2 + int(rng() % 3) : 1;
  for (int k = 0; k < edits; ++k) {
    const size_t pos = s.empty() ? 0 : rng() % s.size();
    switch (rng() % 6) {
      case 0:
        if (!s.empty()) s[pos] = char(rng());
        break;
      case 1:
        if (!s.empty()) s.erase(pos, 1 + rng() % 8);
        break;
      case 2:
        s.insert(pos, tokens[rng() % std::size(tokens)]);
        break;
      case 3:
        if (!s.empty()) s.resize(pos);
        break;
      case 4: {  // replace a digit run with another number
        const size_t d = s.find_first_of("0123456789", pos);
        if (d != std::string::npos) {
          const size_t e = s.find_first_not_of("0123456789", d);
          s.replace(d, e == std::string::npos ? std::string::npos : e - d,
                    std::to_string(int64_t(rng()) - (1 << 20)));
        }
        break;
      }
      case 5: {  // duplicate a slice
        const size_t len = rng() % 24;
        s.insert(pos, s.substr(rng() % (s.size() + 1), len));
        break;
      }
    }
  }
  return s;
}

TEST(safetensors_mutation, parser_only_throws_dsv4_error) {
  std::mt19937 rng(20251122);
  const std::string seed = seed_header();
  int accepted = 0;
  int rejected = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    const std::string header = mutate(seed, rng);
    // Sometimes lie about the length, sometimes cut the buffer, and vary the data size.
    uint64_t length = header.size();
    if (rng() % 8 == 0) length = rng() % 2 ? uint64_t(rng()) : length + rng() % 16;
    std::vector<uint8_t> bytes = raw_file(header, 0, length);
    size_t available = bytes.size();
    if (rng() % 8 == 0) available = rng() % (available + 1);
    const uint64_t file_size = bytes.size() + rng() % 64;
    try {
      const auto h = parse_safetensors_header(bytes.data(), available, file_size, "mutant");
      ++accepted;
      // Anything accepted satisfies the invariants the reader relies on, and agrees with a
      // plain JSON reading of the header.
      const json doc = json::parse(header);
      ASSERT_EQ(h.entries.size() + h.metadata.size(), doc.size() - doc.contains("__metadata__") +
                                                          doc.value("__metadata__", json{}).size())
          << header;
      for (const auto& e : h.entries) {
        ASSERT_LE(e.begin, e.end);
        ASSERT_LE(h.data_offset + e.end, file_size);
        ASSERT_EQ(dtype_bytes(e.type, e.shape.numel()), e.end - e.begin);
        const json& d = doc.at(e.name);
        ASSERT_EQ(d.at("dtype").get<std::string>(), dtype_name(e.type)) << header;
        ASSERT_EQ(d.at("shape").get<std::vector<int64_t>>(), e.shape.to_vector()) << header;
        ASSERT_EQ(d.at("data_offsets")[0].get<uint64_t>(), e.begin) << header;
        ASSERT_EQ(d.at("data_offsets")[1].get<uint64_t>(), e.end) << header;
      }
    } catch (const error& e) {
      ++rejected;
      ASSERT_NE(std::string(e.what()).find("mutant"), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      FAIL() << "non-dsv4 exception " << e.what() << " for header: " << header;
    }
  }
  std::printf("mutations: %d accepted, %d rejected\n", accepted, rejected);
  EXPECT_GT(accepted, 20);
  EXPECT_GT(rejected, 1000);
}

}  // namespace
}  // namespace dsv4
