#!/usr/bin/env bash
# What the global rate limit tests run: Debian's redis-server (installed when missing) and the
# envoyproxy/ratelimit binary (built once per go.sum by build.sh). Prints the binary's path.
# Idempotent and quick (a few milliseconds) when both are already there.
set -euo pipefail
if ! command -v redis-server >/dev/null; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "ratelimit: redis-server is missing; install Debian's redis-server package" >&2
    exit 1
  fi
  echo "ratelimit: installing redis-server from Debian" >&2
  export DEBIAN_FRONTEND=noninteractive
  # The package lists of a fresh machine may be missing or stale: refresh them only when needed.
  apt-get install -y -qq redis-server >/dev/null 2>&1 ||
    { apt-get update -qq && apt-get install -y -qq redis-server >/dev/null; }
fi
exec "$(dirname "$0")/build.sh"
