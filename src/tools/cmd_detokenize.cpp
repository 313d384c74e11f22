// dsv4 detokenize: token ids -> text with a tokenizer.json (printed exactly, no newline added).
#include <cstdio>

#include "core/error.h"
#include "text/tokenizer.h"
#include "tools/command.h"
#include "tools/id_list.h"

namespace dsv4::tools {
namespace {

struct detokenize_options {
  std::string tokenizer;
  std::string ids;
  bool skip_special = false;
};

int run_detokenize(const detokenize_options& o) {
  std::vector<std::int32_t> ids;
  for (std::int64_t v : parse_int_list(o.ids, "--ids")) {
    DSV4_CHECK(v >= 0 && v <= INT32_MAX, "--ids: {} is not a token id", v);
    ids.push_back(std::int32_t(v));
  }
  const auto tok = text::tokenizer::load(o.tokenizer);
  const std::string out = tok.decode(ids, o.skip_special);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

const command_registration registration(
    "detokenize", "Decode token ids to text with a tokenizer.json", [](CLI::App& sub) {
      auto o = std::make_shared<detokenize_options>();
      sub.add_option("--tokenizer", o->tokenizer, "tokenizer.json")->required();
      sub.add_option("--ids", o->ids, "Comma-separated token ids")->required();
      sub.add_flag("--skip-special", o->skip_special, "Drop tokens marked special");
      return [o] { return run_detokenize(*o); };
    });

}  // namespace
}  // namespace dsv4::tools
