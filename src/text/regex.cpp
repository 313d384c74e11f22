#include "text/regex.h"

#include <oniguruma.h>

#include <mutex>

#include "core/error.h"
#include "text/utf8.h"

namespace dsv4::text {
namespace {

void initialize_oniguruma() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
}

std::string error_text(int code, OnigErrorInfo* info) {
  OnigUChar buffer[ONIG_MAX_ERROR_MESSAGE_LEN];
  const int length =
      info ? onig_error_code_to_str(buffer, code, info) : onig_error_code_to_str(buffer, code);
  return std::string(reinterpret_cast<const char*>(buffer), length > 0 ? length : 0);
}

// One region per thread: allocating it per search would dominate short searches.
OnigRegion* thread_region() {
  struct holder {
    OnigRegion* region = onig_region_new();
    ~holder() { onig_region_free(region, 1); }
  };
  thread_local holder h;
  return h.region;
}

}  // namespace

struct regex::impl {
  regex_t* compiled = nullptr;
  ~impl() {
    if (compiled) onig_free(compiled);
  }
};

regex::regex(std::string_view pattern) : impl_(std::make_unique<impl>()) {
  initialize_oniguruma();
  DSV4_CHECK(utf8::is_valid(pattern), "regex pattern is not valid UTF-8");
  OnigErrorInfo info{};
  const auto* begin = reinterpret_cast<const OnigUChar*>(pattern.data());
  const int code = onig_new(&impl_->compiled, begin, begin + pattern.size(), ONIG_OPTION_NONE,
                            ONIG_ENCODING_UTF8, ONIG_SYNTAX_RUBY, &info);
  if (code != ONIG_NORMAL) {
    impl_->compiled = nullptr;
    fail("cannot compile regex '{}': {}", pattern, error_text(code, &info));
  }
}

regex::~regex() = default;
regex::regex(regex&&) noexcept = default;
regex& regex::operator=(regex&&) noexcept = default;

void regex::find_all(std::string_view subject,
                     std::vector<std::pair<std::size_t, std::size_t>>& matches) const {
  const auto* begin = reinterpret_cast<const OnigUChar*>(subject.data());
  const auto* end = begin + subject.size();
  OnigRegion* region = thread_region();
  std::size_t start = 0;
  while (start <= subject.size()) {
    const int found =
        onig_search(impl_->compiled, begin, end, begin + start, end, region, ONIG_OPTION_NONE);
    if (found == ONIG_MISMATCH) break;
    DSV4_CHECK(found >= 0, "regex search failed: {}", error_text(found, nullptr));
    const auto match_begin = std::size_t(region->beg[0]);
    const auto match_end = std::size_t(region->end[0]);
    if (match_end > match_begin) {
      matches.emplace_back(match_begin, match_end);
      start = match_end;
    } else {
      // Empty match: keep it out of the split (it carries no bytes) and step one character.
      if (match_begin >= subject.size()) break;
      const std::size_t step = utf8::char_length(subject.substr(match_begin));
      start = match_begin + (step ? step : 1);
    }
  }
}

}  // namespace dsv4::text
