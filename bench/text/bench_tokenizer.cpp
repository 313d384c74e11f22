// Tokenizer throughput: encodes a corpus of documents (a JSONL file of strings, as written by
// scripts/tokenizer_bench.py) on one thread and reports MB/s, tokens and an id checksum that the
// Python side compares against Hugging Face tokenizers.
//
//   bench_text_tokenizer TOKENIZER_JSON CORPUS_JSONL [REPEATS]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "text/tokenizer.h"

namespace {

// FNV-1a over the ids of all documents in order (the Python script computes the same).
std::uint64_t checksum(std::uint64_t hash, const std::vector<std::int32_t>& ids) {
  for (std::int32_t id : ids) {
    hash ^= std::uint64_t(std::uint32_t(id));
    hash *= 1099511628211ULL;
  }
  return hash;
}

int run(int argc, char** argv) {
  DSV4_CHECK(argc >= 3, "usage: {} TOKENIZER_JSON CORPUS_JSONL [REPEATS]", argv[0]);
  const int repeats = argc > 3 ? std::stoi(argv[3]) : 3;
  std::vector<std::string> documents;
  std::size_t bytes = 0;
  std::ifstream in(argv[2], std::ios::binary);
  DSV4_CHECK(in.good(), "cannot open corpus {}", argv[2]);
  for (std::string line; std::getline(in, line);) {
    documents.push_back(nlohmann::json::parse(line).get<std::string>());
    bytes += documents.back().size();
  }
  const auto load_start = std::chrono::steady_clock::now();
  const auto tok = dsv4::text::tokenizer::load(argv[1]);
  const double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  std::printf("dsv4: load %.3f s, corpus %zu documents, %.2f MB\n", load_s, documents.size(),
              bytes / 1e6);
  for (int r = 0; r < repeats; ++r) {
    std::uint64_t hash = 1469598103934665603ULL;
    std::size_t tokens = 0;
    const auto start = std::chrono::steady_clock::now();
    for (const auto& document : documents) {
      const auto ids = tok.encode(document);
      tokens += ids.size();
      hash = checksum(hash, ids);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("dsv4: run %d: %.3f s, %.2f MB/s, %zu tokens, checksum %016llx\n", r, seconds,
                bytes / 1e6 / seconds, tokens, static_cast<unsigned long long>(hash));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_text_tokenizer: error: %s\n", e.what());
    return 1;
  }
}
