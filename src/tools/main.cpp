// The dsv4 command-line tool: one executable, one subcommand per job.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"dsv4: DeepSeek-V4 inference engine"};
  app.require_subcommand(1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const dsv4::error& e) {
    std::fprintf(stderr, "dsv4: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
