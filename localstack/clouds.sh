#!/usr/bin/env bash
# The emulators of Mill's stores outside AWS, on loopback only:
#   - fake-gcs-server (Google Cloud Storage) on $MILL_GCS_EMULATOR_URL
#     (127.0.0.1:4443, plain http, objects in memory), built with go from the
#     version go.mod pins, into .local/bin (the Go tests also run it in
#     process: pkg/storage/gcsstore);
#   - Azurite's blob service (Azure Blob Storage) on $MILL_AZURITE_BLOB_URL
#     (127.0.0.1:10000, blobs in memory up to 4 GiB: make bench writes two 1 GiB blobs; telemetry off), npm package azurite
#     installed into .local/azurite (Debian's nodejs and npm when missing).
# Usage: localstack/clouds.sh up|down. Idempotent: an emulator that already
# answers is left alone; down stops only what up started (pid files under
# .local/). localstack/up.sh and down.sh call it.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
state="$root/.local"
mkdir -p "$state"
# shellcheck source=env.sh
. "$here/env.sh"
log() { printf 'localstack/clouds: %s\n' "$*" >&2; }
# shellcheck source=lib.sh
. "$here/lib.sh"

AZURITE_VERSION=3.35.0

answers() { curl -s -o /dev/null --max-time 2 "$1" 2>/dev/null; }
gcs_answers() { answers "$MILL_GCS_EMULATOR_URL/storage/v1/b"; }
azurite_answers() { answers "$MILL_AZURITE_BLOB_URL?comp=list"; }

wait_for() { # name pidfile seconds command...
  local name=$1 pidfile=$2 secs=$3 i; shift 3
  for ((i = 0; i < secs * 4; i++)); do
    if "$@"; then return 0; fi
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      log "$name exited: see its log under .local/"
      rm -f "$pidfile"
      return 1
    fi
    sleep 0.25
  done
  log "$name did not answer within ${secs}s"
  return 1
}

hostport() { # URL -> host port
  local hp=${1#*://}; hp=${hp%%/*}
  printf '%s %s\n' "${hp%:*}" "${hp##*:}"
}

loopback_only() { # name host
  case $2 in
    127.* | localhost | '[::1]') ;;
    *) log "$1: $2 is not a loopback address; the emulators listen on loopback only"; return 1 ;;
  esac
}

up_gcs() {
  if gcs_answers; then log "fake-gcs-server already answers at $MILL_GCS_EMULATOR_URL"; return 0; fi
  local host port
  read -r host port < <(hostport "$MILL_GCS_EMULATOR_URL")
  loopback_only fake-gcs-server "$host"
  mkdir -p "$state/bin"
  log "building fake-gcs-server (the version go.mod pins) into .local/bin"
  (cd "$root" && go build -o "$state/bin/fake-gcs-server" github.com/fsouza/fake-gcs-server)
  log "starting fake-gcs-server on $host:$port (log: .local/fake-gcs.log)"
  nohup "$state/bin/fake-gcs-server" -scheme http -host "$host" -port "$port" -backend memory \
    -public-host "$host:$port" -external-url "$MILL_GCS_EMULATOR_URL" -log-level warn >"$state/fake-gcs.log" 2>&1 &
  echo $! >"$state/fake-gcs.pid"
  wait_for "fake-gcs-server" "$state/fake-gcs.pid" 60 gcs_answers
}

up_azurite() {
  if azurite_answers; then log "Azurite already answers at $MILL_AZURITE_BLOB_URL"; return 0; fi
  local host port dir="$state/azurite"
  read -r host port < <(hostport "$MILL_AZURITE_BLOB_URL")
  loopback_only Azurite "$host"
  if [[ "$("$dir/node_modules/.bin/azurite-blob" --version 2>/dev/null)" != "$AZURITE_VERSION" ]]; then
    command -v npm >/dev/null 2>&1 || ensure_apt_packages nodejs npm
    log "installing azurite@$AZURITE_VERSION into .local/azurite"
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-audit --no-fund --silent "azurite@$AZURITE_VERSION"
  fi
  log "starting Azurite (blob) on $host:$port (log: .local/azurite.log)"
  nohup "$dir/node_modules/.bin/azurite-blob" --blobHost "$host" --blobPort "$port" --inMemoryPersistence --extentMemoryLimit 4096 --silent \
    --disableTelemetry --skipApiVersionCheck --loose >"$state/azurite.log" 2>&1 &
  echo $! >"$state/azurite.pid"
  wait_for "Azurite" "$state/azurite.pid" 60 azurite_answers
}

case "${1:-}" in
  up)
    command -v curl >/dev/null 2>&1 || ensure_apt_packages curl
    up_gcs
    up_azurite
    ;;
  down)
    stop_pidfile "fake-gcs-server" "$state/fake-gcs.pid" 10
    stop_pidfile "Azurite" "$state/azurite.pid" 10
    ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
