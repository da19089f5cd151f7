#!/usr/bin/env bash
# Stop what localstack/up.sh (and localstack/host.sh) started, and nothing
# else. Data under .local/pgdata is kept (remove .local/ to start from
# scratch).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
state="$root/.local"
log() { printf 'localstack/down: %s\n' "$*" >&2; }
# shellcheck source=lib.sh
. "$here/lib.sh"

# LocalStack in host mode (make test/localstack, make localstack/up).
"$here/host.sh" down
if [[ -f "$state/compose.started" ]]; then
  log "stopping docker compose services"
  docker compose -f "$here/docker-compose.yml" down
  rm -f "$state/compose.started"
fi
stop_pidfile "moto server" "$state/moto.pid" 10
"$here/clouds.sh" down
"$here/mariadb.sh" down
if [[ -f "$state/postgres.started" ]]; then
  pgbin=$(cat "$state/postgres.started")
  as_pg=()
  [[ $(id -u) -eq 0 ]] && as_pg=(runuser -u postgres --)
  if [[ -f "$state/pgdata/postmaster.pid" ]]; then
    log "stopping PostgreSQL"
    "${as_pg[@]}" "$pgbin/pg_ctl" -D "$state/pgdata" -m fast -w stop >/dev/null || true
  fi
  rm -f "$state/postgres.started"
fi
log "done"
