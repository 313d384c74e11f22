#include "text/bpe_model.h"

#include <bit>
#include <queue>

#include "core/error.h"
#include "text/byte_level.h"

namespace dsv4::text {
namespace {

std::uint64_t pair_key(std::int32_t left, std::int32_t right) {
  return (std::uint64_t(std::uint32_t(left)) << 32) | std::uint32_t(right);
}

std::uint64_t mix(std::uint64_t key) {  // splitmix64 finaliser
  key ^= key >> 30;
  key *= 0xbf58476d1ce4e5b9ULL;
  key ^= key >> 27;
  key *= 0x94d049bb133111ebULL;
  return key ^ (key >> 31);
}

}  // namespace

void bpe_model::merge_table::reserve(std::size_t count) {
  const std::size_t size = std::bit_ceil(std::max<std::size_t>(16, count * 2));
  keys.assign(size, empty_key);
  values.assign(size, {0, 0});
  mask = size - 1;
}

void bpe_model::merge_table::insert(std::uint64_t key,
                                    std::pair<std::int32_t, std::int32_t> value) {
  for (std::uint64_t slot = mix(key) & mask;; slot = (slot + 1) & mask) {
    if (keys[slot] == empty_key) {
      keys[slot] = key;
      values[slot] = value;
      return;
    }
    if (keys[slot] == key) return;  // a repeated merge keeps its first (lowest) rank
  }
}

const std::pair<std::int32_t, std::int32_t>* bpe_model::merge_table::find(std::uint64_t key) const {
  for (std::uint64_t slot = mix(key) & mask;; slot = (slot + 1) & mask) {
    if (keys[slot] == key) return &values[slot];
    if (keys[slot] == empty_key) return nullptr;
  }
}

bpe_model::bpe_model(std::unordered_map<std::string, std::int32_t> vocab,
                     const std::vector<std::pair<std::string, std::string>>& merges,
                     bool ignore_merges)
    : vocab_(std::move(vocab)), ignore_merges_(ignore_merges) {
  for (int byte = 0; byte < 256; ++byte) {
    auto it = vocab_.find(std::string(1, char(byte)));
    byte_ids_[byte] = it == vocab_.end() ? -1 : it->second;
  }
  merges_.reserve(merges.size());
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    auto l = vocab_.find(left), r = vocab_.find(right), m = vocab_.find(left + right);
    DSV4_CHECK(l != vocab_.end() && r != vocab_.end() && m != vocab_.end(),
               "BPE merge {} ('{} {}') uses a token missing from the vocabulary", rank,
               byte_level::from_bytes(left), byte_level::from_bytes(right));
    merges_.insert(pair_key(l->second, r->second), {std::int32_t(rank), m->second});
  }
}

void bpe_model::merge(std::string_view bytes, std::vector<std::int32_t>& out) const {
  if (ignore_merges_) {
    auto it = vocab_.find(std::string(bytes));
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  struct symbol {
    std::int32_t id;
    std::int32_t prev, next;  // -1 at the ends
    bool alive;
  };
  std::vector<symbol> symbols;
  symbols.reserve(bytes.size());
  for (char c : bytes) {
    const std::int32_t id = byte_ids_[static_cast<unsigned char>(c)];
    if (id < 0) continue;
    const auto index = std::int32_t(symbols.size());
    symbols.push_back({id, index - 1, index + 1, true});
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  // (rank, left position, merged id): the smallest rank wins, then the leftmost position.
  struct candidate {
    std::int32_t rank, pos, new_id;
    bool operator>(const candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<candidate, std::vector<candidate>, std::greater<candidate>> queue;
  auto push_pair = [&](std::int32_t left) {
    const std::int32_t right = symbols[left].next;
    if (right < 0) return;
    if (const auto* m = merges_.find(pair_key(symbols[left].id, symbols[right].id)))
      queue.push({m->first, left, m->second});
  };
  for (std::int32_t i = 0; i + 1 < std::int32_t(symbols.size()); ++i) push_pair(i);

  while (!queue.empty()) {
    const candidate top = queue.top();
    queue.pop();
    symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    // The pair may have changed since it was queued: re-check that it still merges to new_id.
    const auto* m = merges_.find(pair_key(left.id, symbols[left.next].id));
    if (m == nullptr || m->second != top.new_id) continue;
    symbol& right = symbols[left.next];
    left.id = top.new_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(top.pos);
  }
  for (std::int32_t i = 0; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
}

void bpe_model::encode_piece(std::string_view bytes, std::vector<std::int32_t>& out) const {
  if (bytes.size() == 1) {
    if (byte_ids_[static_cast<unsigned char>(bytes[0])] >= 0)
      out.push_back(byte_ids_[static_cast<unsigned char>(bytes[0])]);
    return;
  }
  if (bytes.size() > cache_max_piece) {
    merge(bytes, out);
    return;
  }
  {
    std::lock_guard lock(cache_mutex_);
    auto it = cache_.find(bytes);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const std::size_t start = out.size();
  merge(bytes, out);
  std::vector<std::int32_t> ids(out.begin() + std::ptrdiff_t(start), out.end());
  std::lock_guard lock(cache_mutex_);
  if (cache_.size() >= cache_capacity) cache_.clear();  // crude bound; refills with hot pieces
  cache_.emplace(std::string(bytes), std::move(ids));
}

}  // namespace dsv4::text
