# Sourced by the build.sh scripts of Go tools the tests run. A binary is cached under
# ~/.cache/gw/<name>-<hash of the files that pin it>, so a second call is instant, and a lock keeps
# two concurrent first builds (parallel test files) from racing: one builds, the other waits.

# cached_go_binary NAME FILE...: sets $bin and $dir. Returns 0 (with the lock held) when the caller must build
# "$bin.partial" and move it to "$bin"; returns 1 when the binary is already there.
cached_go_binary() {
  local name=$1 key
  shift
  key=$(cat "$@" | sha256sum | cut -c1-16)
  dir="${XDG_CACHE_HOME:-$HOME/.cache}/gw/$name-$key"
  bin="$dir/$name"
  [ -x "$bin" ] && return 1
  command -v go >/dev/null || { echo "$name: go is not installed" >&2; exit 1; }
  mkdir -p "$dir"
  exec 9>"$dir/.lock"
  flock 9
  [ -x "$bin" ] && return 1
  return 0
}
