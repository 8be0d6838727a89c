#!/usr/bin/env bash
# Installs the benchmark's system tools from Debian when absent (nginx, wrk, h2load, taskset); prints
# nothing and installs nothing when they are all there, so `make bench` stays quick on a warm machine.
set -euo pipefail

declare -A package_of=([nginx]=nginx [wrk]=wrk [h2load]=nghttp2-client [taskset]=util-linux)
missing=()
for tool in nginx wrk h2load taskset; do
  # Debian installs nginx in /usr/sbin, which a non-root PATH may lack.
  if ! PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin" command -v "$tool" >/dev/null 2>&1; then
    missing+=("${package_of[$tool]}")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "bench/setup.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
echo "bench/setup.sh: installing ${missing[*]}" >&2
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
