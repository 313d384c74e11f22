#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "core/error.h"

namespace dsv4 {

namespace {

// Same bound as the reference implementation (huggingface/safetensors MAX_HEADER_SIZE).
constexpr uint64_t k_max_header_bytes = 100'000'000;

using json = nlohmann::json;

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void write_u64_le(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}

// A header entry as written, before validation. Shape entries beyond k_max_rank are counted but
// not kept (validation rejects them).
struct raw_entry {
  std::string name;
  std::string type;
  std::array<uint64_t, k_max_rank> shape{};
  size_t rank = 0;
  uint64_t begin = 0;
  uint64_t end = 0;

  void push_dim(uint64_t n) {
    if (rank < shape.size()) shape[rank] = n;
    ++rank;
  }
};

std::string shape_text(const raw_entry& r) {
  std::string s = "[";
  for (size_t i = 0; i < std::min(r.rank, r.shape.size()); ++i)
    s += (i ? ", " : "") + std::to_string(r.shape[i]);
  return s + (r.rank > r.shape.size() ? ", ...]" : "]");
}

// Checks the values of an entry against the data section of `data_size` bytes.
safetensors_entry validate_entry(const raw_entry& r, uint64_t data_size,
                                 const std::string& context) {
  auto bad = [&](std::string_view what) {
    fail("safetensors {}: tensor {}: {}", context, r.name, what);
  };
  safetensors_entry e;
  e.name = r.name;
  const auto type = dtype_from_name(r.type);
  if (!type) bad(fmt::format("unknown dtype \"{}\"", r.type));
  e.type = *type;

  if (r.rank > size_t(k_max_rank))
    bad(fmt::format("rank {} exceeds the maximum {}", r.rank, k_max_rank));
  // Element count, kept at most 2^56 so that count * bits (<= 64) cannot overflow.
  constexpr uint64_t k_max_numel = uint64_t(1) << 56;
  uint64_t numel = 1;
  std::vector<int64_t> shape;
  for (size_t i = 0; i < r.rank; ++i) {
    const uint64_t n = r.shape[i];
    if (n > k_max_numel || (n != 0 && numel > k_max_numel / n))
      bad(fmt::format("shape {} is too large", shape_text(r)));
    shape.push_back(int64_t(n));
    numel *= n;
  }
  e.shape = dims(shape);

  e.begin = r.begin;
  e.end = r.end;
  if (e.begin > e.end)
    bad(fmt::format("data_offsets [{}, {}] have begin after end", e.begin, e.end));
  if (e.end > data_size)
    bad(fmt::format("data_offsets [{}, {}] exceed the data section of {} bytes", e.begin, e.end,
                    data_size));

  const uint64_t bits = numel * uint64_t(dtype_bits(e.type));
  if (bits % 8 != 0) bad(fmt::format("{} elements of {} do not fill whole bytes", numel, r.type));
  if (bits / 8 != e.end - e.begin)
    bad(fmt::format("shape {} of {} needs {} bytes but data_offsets [{}, {}] hold {}",
                    e.shape.str(), r.type, bits / 8, e.begin, e.end, e.end - e.begin));
  return e;
}

// ---- general path: a JSON document, with a precise message for every structural fault ----

// A JSON number usable as a non-negative integer; floats (even integral ones) are rejected,
// because a shape or offset written as 3.0 signals a broken writer.
bool as_unsigned(const json& v, uint64_t& out) {
  if (v.is_number_unsigned()) {
    out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    out = uint64_t(v.get<int64_t>());
    return true;
  }
  return false;
}

raw_entry entry_from_json(const std::string& name, const json& value, const std::string& context) {
  auto bad = [&](std::string_view what) {
    fail("safetensors {}: tensor {}: {}", context, name, what);
  };
  if (!value.is_object()) bad("entry is not a JSON object");
  raw_entry r;
  r.name = name;
  const auto type_it = value.find("dtype");
  if (type_it == value.end() || !type_it->is_string()) bad("missing or non-string dtype");
  r.type = type_it->get<std::string>();

  const auto shape_it = value.find("shape");
  if (shape_it == value.end() || !shape_it->is_array()) bad("missing or non-array shape");
  for (const json& d : *shape_it) {
    uint64_t n = 0;
    if (!as_unsigned(d, n))
      bad(fmt::format("shape {} has a non-integer or negative entry", shape_it->dump()));
    r.push_dim(n);
  }

  const auto offsets_it = value.find("data_offsets");
  if (offsets_it == value.end() || !offsets_it->is_array() || offsets_it->size() != 2)
    bad("data_offsets must be an array [begin, end]");
  if (!as_unsigned((*offsets_it)[0], r.begin) || !as_unsigned((*offsets_it)[1], r.end))
    bad(fmt::format("data_offsets {} are not non-negative integers", offsets_it->dump()));
  return r;
}

std::map<std::string, std::string> metadata_from_json(const json& value,
                                                      const std::string& context) {
  std::map<std::string, std::string> metadata;
  if (value.is_null()) return metadata;
  DSV4_CHECK(value.is_object(), "safetensors {}: __metadata__ is not a JSON object", context);
  for (const auto& [key, v] : value.items()) {
    DSV4_CHECK(v.is_string(), "safetensors {}: __metadata__ value of \"{}\" is not a string",
               context, key);
    metadata.emplace(key, v.get<std::string>());
  }
  return metadata;
}

void parse_with_document(const uint8_t* text, size_t size, uint64_t data_size,
                         const std::string& context, safetensors_header& header) {
  try {
    const json root = json::parse(text, text + size, nullptr, /*allow_exceptions=*/false);
    DSV4_CHECK(!root.is_discarded(), "safetensors {}: header is not valid JSON", context);
    DSV4_CHECK(root.is_object(), "safetensors {}: header is not a JSON object", context);
    header.entries.reserve(root.size());
    for (const auto& [name, value] : root.items()) {
      if (name == "__metadata__") {
        header.metadata = metadata_from_json(value, context);
        continue;
      }
      header.entries.push_back(
          validate_entry(entry_from_json(name, value, context), data_size, context));
    }
  } catch (const json::exception& e) {
    // Defensive: every access above is type-checked first, so this signals a bug here.
    fail("safetensors {}: malformed header: {}", context, e.what());
  }
}

// ---- fast path: SAX events straight into entries, no JSON document ----
//
// A release checkpoint's headers hold ~70k entries; building and freeing a document for them
// dominated opening time. This path accepts only the exact expected structure (entries with the
// keys dtype, shape, data_offsets once each; string metadata) and stops at anything else, so the
// general path then produces the result or the precise error. Values are checked by the same
// validate_entry either way.
class header_sax {
 public:
  header_sax(uint64_t data_size, const std::string& context, safetensors_header& header)
      : data_size_(data_size), context_(context), header_(header) {}

  bool null() {
    if (state_ != state::metadata_value_start) return false;
    state_ = state::root;
    return true;
  }
  bool boolean(bool) { return false; }
  bool number_integer(int64_t) { return false; }  // the lexer reports only negatives this way
  bool number_float(double, const std::string&) { return false; }
  bool binary(json::binary_t&) { return false; }
  bool number_unsigned(uint64_t v) {
    if (state_ == state::shape) {
      entry_.push_dim(v);
      return true;
    }
    if (state_ == state::offsets && offsets_ < 2) {
      (offsets_++ == 0 ? entry_.begin : entry_.end) = v;
      return true;
    }
    return false;
  }
  bool string(std::string& v) {
    if (state_ == state::entry && field_ == field::dtype) {
      entry_.type = std::move(v);
      return true;
    }
    if (state_ == state::metadata) {
      header_.metadata.emplace(std::move(key_), std::move(v));
      return true;
    }
    return false;
  }
  bool start_object(size_t) {
    switch (state_) {
      case state::start:
        state_ = state::root;
        return true;
      case state::entry_start:
        state_ = state::entry;
        seen_ = 0;
        return true;
      case state::metadata_value_start:
        state_ = state::metadata;
        return true;
      default:
        return false;
    }
  }
  bool key(std::string& k) {
    switch (state_) {
      case state::root:
        if (k == "__metadata__") {
          state_ = state::metadata_value_start;
        } else {
          entry_ = raw_entry{};
          entry_.name = std::move(k);
          state_ = state::entry_start;
        }
        return true;
      case state::entry: {
        if (k == "dtype") {
          field_ = field::dtype;
        } else if (k == "shape") {
          field_ = field::shape;
        } else if (k == "data_offsets") {
          field_ = field::offsets;
        } else {
          return false;
        }
        const unsigned bit = 1u << unsigned(field_);
        if (seen_ & bit) return false;
        seen_ |= bit;
        return true;
      }
      case state::metadata:
        key_ = std::move(k);
        return true;
      default:
        return false;
    }
  }
  bool end_object() {
    switch (state_) {
      case state::entry:
        if (seen_ != 7) return false;
        header_.entries.push_back(validate_entry(entry_, data_size_, context_));
        state_ = state::root;
        return true;
      case state::metadata:
        state_ = state::root;
        return true;
      case state::root:
        state_ = state::done;
        return true;
      default:
        return false;
    }
  }
  bool start_array(size_t) {
    if (state_ != state::entry) return false;
    if (field_ == field::shape) {
      state_ = state::shape;
      return true;
    }
    if (field_ == field::offsets) {
      state_ = state::offsets;
      offsets_ = 0;
      return true;
    }
    return false;
  }
  bool end_array() {
    if (state_ == state::shape || (state_ == state::offsets && offsets_ == 2)) {
      state_ = state::entry;
      return true;
    }
    return false;
  }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

  bool complete() const { return state_ == state::done; }

 private:
  enum class state {
    start,
    root,
    entry_start,
    entry,
    shape,
    offsets,
    metadata_value_start,
    metadata,
    done
  };
  enum class field { dtype, shape, offsets };

  uint64_t data_size_;
  const std::string& context_;
  safetensors_header& header_;
  state state_ = state::start;
  field field_ = field::dtype;
  unsigned seen_ = 0;
  int offsets_ = 0;
  raw_entry entry_;
  std::string key_;
};

[[noreturn]] void fail_errno(const std::string& path, std::string_view what) {
  fail("safetensors {}: {}: {}", path, what, std::strerror(errno));
}

}  // namespace

safetensors_header parse_safetensors_header(const uint8_t* bytes, size_t available,
                                            uint64_t file_size, const std::string& context) {
  DSV4_CHECK(available <= file_size, "safetensors {}: {} bytes available but the file has {}",
             context, available, file_size);
  DSV4_CHECK(file_size >= 8, "safetensors {}: file of {} bytes is too small for a header", context,
             file_size);
  DSV4_CHECK(available >= 8, "safetensors {}: only {} bytes available for the header length",
             context, available);
  const uint64_t n = read_u64_le(bytes);
  DSV4_CHECK(n <= k_max_header_bytes, "safetensors {}: header length {} exceeds the {} byte bound",
             context, n, k_max_header_bytes);
  DSV4_CHECK(n <= file_size - 8,
             "safetensors {}: header length {} extends beyond the file of {} bytes", context, n,
             file_size);
  DSV4_CHECK(8 + n <= available,
             "safetensors {}: header of {} bytes is truncated ({} bytes available)", context, n,
             available);

  safetensors_header header;
  header.data_offset = 8 + n;
  const uint64_t data_size = file_size - header.data_offset;

  const uint8_t* text = bytes + 8;
  header_sax sax(data_size, context, header);
  if (!json::sax_parse(text, text + n, &sax) || !sax.complete()) {
    header = safetensors_header{};
    header.data_offset = 8 + n;
    parse_with_document(text, n, data_size, context, header);
  }

  // JSON objects may repeat a key; a repeated tensor name would make lookups ambiguous.
  std::unordered_set<std::string_view> names(header.entries.size());
  for (const auto& e : header.entries)
    DSV4_CHECK(names.insert(e.name).second, "safetensors {}: tensor {}: listed twice", context,
               e.name);

  std::sort(header.entries.begin(), header.entries.end(),
            [](const safetensors_entry& a, const safetensors_entry& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  // Empty tensors occupy no bytes, so they cannot overlap anything.
  const safetensors_entry* last = nullptr;
  for (const auto& e : header.entries) {
    if (e.begin == e.end) continue;
    DSV4_CHECK(last == nullptr || e.begin >= last->end,
               "safetensors {}: tensor {}: data_offsets [{}, {}] overlap tensor {} [{}, {}]",
               context, e.name, e.begin, e.end, last->name, last->begin, last->end);
    last = &e;
  }
  return header;
}

std::shared_ptr<safetensors_file> safetensors_file::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_errno(path, "cannot open");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    fail_errno(path, "cannot stat");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("safetensors {}: not a regular file", path);
  }
  const size_t size = size_t(st.st_size);
  void* map = nullptr;
  // mmap rejects length 0; an empty file then fails header parsing below.
  if (size > 0) {
    map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      const int saved = errno;
      ::close(fd);
      errno = saved;
      fail_errno(path, "cannot mmap");
    }
  }
  // The mapping keeps the file alive; the descriptor is no longer needed.
  ::close(fd);

  std::shared_ptr<safetensors_file> file(new safetensors_file());
  file->path_ = path;
  file->map_ = map;
  file->map_size_ = size;
  static const uint8_t k_empty[1] = {0};
  const auto* bytes = map ? static_cast<const uint8_t*>(map) : k_empty;
  file->header_ = parse_safetensors_header(bytes, size, size, path);
  for (size_t i = 0; i < file->header_.entries.size(); ++i)
    file->index_.emplace(file->header_.entries[i].name, i);
  return file;
}

safetensors_file::~safetensors_file() {
  if (map_ != nullptr) ::munmap(map_, map_size_);
}

const safetensors_entry* safetensors_file::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &header_.entries[it->second];
}

tensor_view safetensors_file::view(const safetensors_entry& entry) const {
  DSV4_CHECK(header_.data_offset + entry.end <= map_size_,
             "safetensors {}: tensor {}: range beyond the mapping", path_, entry.name);
  tensor_view v;
  v.data = static_cast<uint8_t*>(map_) + header_.data_offset + entry.begin;
  v.type = entry.type;
  v.shape = entry.shape;
  v.strides = contiguous_strides(entry.shape);
  v.device = device_kind::cpu;
  return v;
}

void safetensors_writer::add(const std::string& name, const tensor_view& view) {
  DSV4_CHECK(name != "__metadata__", "safetensors writer: reserved tensor name {}", name);
  DSV4_CHECK(view.device == device_kind::cpu, "safetensors writer: tensor {} is not on the host",
             name);
  DSV4_CHECK(view.is_contiguous(), "safetensors writer: tensor {} is not contiguous", name);
  for (const auto& it : items_)
    DSV4_CHECK(it.name != name, "safetensors writer: duplicate tensor {}", name);
  item it{name, view.type, view.shape, {}};
  const size_t bytes = dtype_bytes(view.type, view.numel());
  it.bytes.resize(bytes);
  if (bytes) std::memcpy(it.bytes.data(), view.data, bytes);
  items_.push_back(std::move(it));
}

void safetensors_writer::set_metadata(const std::string& key, const std::string& value) {
  metadata_[key] = value;
}

void safetensors_writer::write(const std::string& path) const {
  json root = json::object();
  uint64_t offset = 0;
  std::vector<uint64_t> begins;
  for (const auto& it : items_) {
    offset = (offset + 7) / 8 * 8;
    begins.push_back(offset);
    root[it.name] = {{"dtype", std::string(dtype_name(it.type))},
                     {"shape", it.shape.to_vector()},
                     {"data_offsets", {offset, offset + it.bytes.size()}}};
    offset += it.bytes.size();
  }
  if (!metadata_.empty()) root["__metadata__"] = metadata_;
  std::string text = root.dump();
  // Padding the header to a multiple of 8 keeps every tensor 8-byte aligned in the file.
  text.append((8 - text.size() % 8) % 8, ' ');

  std::vector<uint8_t> out(8 + text.size() + offset, 0);
  write_u64_le(out.data(), text.size());
  std::memcpy(out.data() + 8, text.data(), text.size());
  for (size_t i = 0; i < items_.size(); ++i)
    if (!items_[i].bytes.empty())
      std::memcpy(out.data() + 8 + text.size() + begins[i], items_[i].bytes.data(),
                  items_[i].bytes.size());

  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) fail_errno(path, "cannot create");
  const bool ok = std::fwrite(out.data(), 1, out.size(), f) == out.size();
  const bool closed = std::fclose(f) == 0;
  DSV4_CHECK(ok && closed, "safetensors {}: write failed", path);
}

}  // namespace dsv4
