#include "text/stream_decoder.h"

#include "text/utf8.h"

namespace dsv4::text {

std::string stream_decoder::push(std::int32_t id) {
  const std::string& bytes = tokenizer_->token_bytes(id);
  if (skip_special_ && tokenizer_->is_special(id)) return {};
  pending_ += bytes;
  std::string out;
  std::size_t pos = 0;
  while (pos < pending_.size()) {
    const std::string_view rest = std::string_view(pending_).substr(pos);
    const std::size_t valid = utf8::valid_prefix_length(rest);
    out.append(rest.substr(0, valid));
    pos += valid;
    if (pos == pending_.size() || utf8::is_incomplete_prefix(rest.substr(valid))) break;
    out.append(utf8::replacement_character);
    pos += utf8::invalid_length(rest.substr(valid));
  }
  pending_.erase(0, pos);
  return out;
}

std::string stream_decoder::flush() {
  std::string out = utf8::to_valid_lossy(pending_);
  pending_.clear();
  return out;
}

}  // namespace dsv4::text
