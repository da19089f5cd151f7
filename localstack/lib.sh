# shellcheck shell=bash
# Helpers shared by the scripts in localstack/ (sourced, not run). The
# sourcing script defines log().

# ensure_apt_packages installs the Debian packages that are missing (as root).
ensure_apt_packages() { # packages...
  local missing=() p
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  if [[ $(id -u) -ne 0 ]]; then
    log "missing Debian packages: ${missing[*]} (run as root, or install them)"
    return 1
  fi
  log "installing Debian packages: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# stop_pidfile stops the process whose pid the file holds (TERM, then KILL
# after the grace period) and removes the file.
stop_pidfile() { # name pidfile grace-seconds
  local name=$1 file=$2 grace=$3 pid
  [[ -f "$file" ]] || return 0
  pid=$(cat "$file")
  if kill -0 "$pid" 2>/dev/null; then
    log "stopping $name (pid $pid)"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 $((grace * 4))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

# build_loopback_shim compiles localstack/loopback.c (an LD_PRELOAD shim that
# turns wildcard binds into loopback binds) into .local/loopback.so when it is
# missing or older than its source, and prints its path.
build_loopback_shim() { # state-dir
  local src lib
  src="$(dirname "${BASH_SOURCE[0]}")/loopback.c" lib="$1/loopback.so"
  if [[ ! -f "$lib" || "$src" -nt "$lib" ]]; then
    command -v cc >/dev/null 2>&1 || ensure_apt_packages gcc libc6-dev
    cc -shared -fPIC -O2 -o "$lib" "$src" -ldl
  fi
  printf '%s\n' "$lib"
}

# descendants prints pid and every process below it.
descendants() { # pid
  local p
  printf '%s\n' "$1"
  for p in $(pgrep -P "$1" 2>/dev/null); do descendants "$p"; done
}

# assert_loopback fails, naming each socket, when a process of pid's tree
# listens on anything but 127.0.0.1 or ::1.
assert_loopback() { # name pid
  local name=$1 pids bad
  command -v ss >/dev/null 2>&1 || ensure_apt_packages iproute2
  pids=$(descendants "$2" | paste -sd'|')
  bad=$(ss -ltnpH 2>/dev/null | grep -E "pid=($pids)," | awk '$4 !~ /^(127\.0\.0\.1|\[::1\]):/ {print $4}' || true)
  if [[ -n "$bad" ]]; then
    log "$name listens beyond loopback: $(echo $bad)"
    return 1
  fi
}
