// Subcommands register themselves: each cmd_*.cpp defines a static `command_registration` that
// adds its CLI11 subcommand and a run function. main() parses, then runs the chosen command.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace dsv4::tools {

struct command {
  std::string name;
  // Declares the subcommand's options on `sub` and returns the function that runs it (called
  // after parsing; returns the process exit code; may throw dsv4::error).
  std::function<std::function<int()>(CLI::App& sub)> setup;
  std::string description;
};

std::vector<command>& command_registry();

struct command_registration {
  command_registration(std::string name, std::string description,
                       std::function<std::function<int()>(CLI::App&)> setup) {
    command_registry().push_back({std::move(name), std::move(setup), std::move(description)});
  }
};

}  // namespace dsv4::tools
