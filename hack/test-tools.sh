#!/usr/bin/env bash
# Debian tools the test suites drive as a user would: tmux (the gwctl trace TUI in a real terminal)
# and curl (uploads with Expect: 100-continue). Installed when missing; quick when they are there.
set -euo pipefail
missing=()
command -v tmux >/dev/null || missing+=(tmux)
command -v curl >/dev/null || missing+=(curl)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "test-tools: missing ${missing[*]}; install Debian's packages of the same names" >&2
  exit 1
fi
echo "test-tools: installing ${missing[*]} from Debian" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 ||
  { apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null; }
