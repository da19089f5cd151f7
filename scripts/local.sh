#!/usr/bin/env bash
# make local: the whole mill on the local emulator and PostgreSQL with the
# real binaries, until Ctrl-C (or SIGTERM). It runs what the README's first
# session shows by hand:
#
#   millctl setup, millctl dev load          once
#   workman                                  in the background
#   dupproducer and bitproducer              every MILL_LOCAL_TICK (60s), as
#                                            cron would; a sweep and a bit run
#                                            start every MILL_LOCAL_FREQUENCY (10M)
#   millctl console --auth none              on MILL_LISTEN (127.0.0.1:8080)
#
# then prints where to look, and on Ctrl-C stops everything it started and
# waits for it. Logs go to MILL_LOCAL_DIR (.local/local). The binaries come
# from MILL_BIN (bin/, made by make build); the services' environment from
# localstack/env.sh (make up). Every name is the binaries' default unless
# its MILL_* variable says otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
. localstack/env.sh
: "${MILL_BIN:=bin}"
: "${MILL_LOCAL_DIR:=.local/local}"
: "${MILL_LOCAL_TICK:=60}"
: "${MILL_LOCAL_FREQUENCY:=10M}"
: "${MILL_LISTEN:=127.0.0.1:8080}"
export MILL_LISTEN
mkdir -p "$MILL_LOCAL_DIR"
log() { printf 'make local: %s\n' "$*"; }

pids=()
stopping=
stop() {
  [[ -n "$stopping" ]] && return
  stopping=1
  trap '' INT TERM
  log "stopping ${#pids[@]} processes…"
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  log "stopped"
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

"$MILL_BIN/millctl" setup >"$MILL_LOCAL_DIR/setup.log"
log "setup done ($(tail -1 "$MILL_LOCAL_DIR/setup.log"))"
"$MILL_BIN/millctl" dev load | tee "$MILL_LOCAL_DIR/dev-load.log" | sed -n 's/^\(registry\|content\): /make local: /p'

"$MILL_BIN/workman" --recheck-delay 10s \
  --http-addr "${MILL_HTTP_ADDR:-127.0.0.1:9464}" 2>"$MILL_LOCAL_DIR/workman.log" &
pids+=($!)
workman=$!

# The producers, as cron would run them. The loop's own sleep is waited
# for in the background so a TERM stops the loop at once.
(
  trap 'kill "$s" 2>/dev/null; exit 0' TERM
  while :; do
    "$MILL_BIN/dupproducer" --frequency "$MILL_LOCAL_FREQUENCY" --progress log >>"$MILL_LOCAL_DIR/dupproducer.log" 2>&1 || true
    "$MILL_BIN/bitproducer" --frequency "$MILL_LOCAL_FREQUENCY" --progress log >>"$MILL_LOCAL_DIR/bitproducer.log" 2>&1 || true
    sleep "$MILL_LOCAL_TICK" & s=$!
    wait "$s"
  done
) &
pids+=($!)

"$MILL_BIN/millctl" console --auth none >"$MILL_LOCAL_DIR/console.log" 2>&1 &
pids+=($!)
url=
for _ in $(seq 100); do
  url=$(sed -n 's/^Mill Console on \(http[^ ]*\).*/\1/p' "$MILL_LOCAL_DIR/console.log")
  [[ -n "$url" ]] && break
  kill -0 "${pids[-1]}" 2>/dev/null || { cat "$MILL_LOCAL_DIR/console.log" >&2; exit 1; }
  sleep 0.1
done

# A Workman that did not start (a bad flag or variable, the port taken)
# has exited by now.
if ! kill -0 "$workman" 2>/dev/null; then
  log "Workman exited:"; tail -20 "$MILL_LOCAL_DIR/workman.log" >&2; exit 1
fi
cat <<EOF
make local: running — Workman, the producers every ${MILL_LOCAL_TICK}s (a sweep and a bit run every ${MILL_LOCAL_FREQUENCY}), the console
  console         ${url:-(not started: see $MILL_LOCAL_DIR/console.log)}
  workman         http://${MILL_HTTP_ADDR:-127.0.0.1:9464}/metrics
  queues          bin/millctl queues --watch
  duplication     bin/millctl content ls acme 2 photos      (a replica of acme's photos)
  bit integrity   bin/millctl bitlog reports                (after the first bit run)
  fleet           bin/millctl fleet
  logs            $MILL_LOCAL_DIR/ (workman.log, dupproducer.log, bitproducer.log, console.log)
  (in another shell: eval "\$(make -s env)" first)
Ctrl-C stops everything.
EOF
wait
