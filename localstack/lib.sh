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
