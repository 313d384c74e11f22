// The dsv4 command-line tool: one executable, one subcommand per job (see command.h).
#include <algorithm>
#include <cstdio>
#include <exception>

#include "core/error.h"
#include "tools/command.h"

namespace dsv4::tools {
std::vector<command>& command_registry() {
  static std::vector<command> registry;
  return registry;
}
}  // namespace dsv4::tools

int main(int argc, char** argv) {
  using namespace dsv4::tools;
  CLI::App app{"dsv4: DeepSeek-V4 inference engine"};
  app.require_subcommand(1);
  auto& registry = command_registry();
  std::sort(registry.begin(), registry.end(),
            [](const command& a, const command& b) { return a.name < b.name; });
  std::vector<std::pair<CLI::App*, std::function<int()>>> runners;
  for (auto& c : registry) {
    CLI::App* sub = app.add_subcommand(c.name, c.description);
    runners.emplace_back(sub, c.setup(*sub));
  }
  try {
    app.parse(argc, argv);
    for (auto& [sub, run] : runners)
      if (sub->parsed()) return run();
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const dsv4::error& e) {
    std::fprintf(stderr, "dsv4: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dsv4: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
