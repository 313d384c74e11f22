#!/usr/bin/env bash
# Installs the Debian 12 packages dsv4 builds against (skips what is already there).
set -euo pipefail
packages=(cmake ninja-build g++ ccache pkg-config python3
          libfmt-dev nlohmann-json3-dev libcli11-dev libonig-dev libicu-dev libxxhash-dev
          libgtest-dev libgmock-dev libbenchmark-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
