// Byte-level BPE with ranked merges. Works on raw bytes: the vocabulary's byte-level spellings
// are converted to bytes at load, so a piece's initial symbols are its bytes and no per-call
// character mapping is needed. Merging follows tokenizers' Word::merge_all: repeatedly apply the
// lowest-rank merge, leftmost first, with a priority queue over a linked list of symbols.
// Results are cached per piece (bounded; thread-safe).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dsv4::text {

class bpe_model {
 public:
  // vocab: raw bytes -> id. merges: pairs of raw-byte tokens, in rank order. Throws dsv4::error
  // when a merge names a token that is not in the vocabulary.
  bpe_model(std::unordered_map<std::string, std::int32_t> vocab,
            const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges);

  // Appends the ids of one pre-tokenized piece (any bytes) to out.
  void encode_piece(std::string_view bytes, std::vector<std::int32_t>& out) const;

  const std::unordered_map<std::string, std::int32_t>& vocab() const { return vocab_; }

 private:
  // Open-addressing map from a symbol pair (left << 32 | right) to (rank, merged id).
  struct merge_table {
    std::vector<std::uint64_t> keys;  // empty_key marks a free slot
    std::vector<std::pair<std::int32_t, std::int32_t>> values;
    std::uint64_t mask = 0;
    static constexpr std::uint64_t empty_key = ~std::uint64_t(0);
    void reserve(std::size_t count);
    void insert(std::uint64_t key, std::pair<std::int32_t, std::int32_t> value);
    const std::pair<std::int32_t, std::int32_t>* find(std::uint64_t key) const;
  };
  void merge(std::string_view bytes, std::vector<std::int32_t>& out) const;

  std::unordered_map<std::string, std::int32_t> vocab_;
  std::int32_t byte_ids_[256];  // -1 when a byte has no token (then it is dropped, like HF)
  merge_table merges_;
  bool ignore_merges_ = false;

  static constexpr std::size_t cache_capacity = 1 << 16;
  static constexpr std::size_t cache_max_piece = 256;  // longer pieces are not cached
  mutable std::mutex cache_mutex_;
  // Transparent hashing: lookups take the piece as a string_view without allocating.
  struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  mutable std::unordered_map<std::string, std::vector<std::int32_t>, string_hash, std::equal_to<>>
      cache_;
};

}  // namespace dsv4::text
