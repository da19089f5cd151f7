#!/usr/bin/env bash
# Start the local services Mill's tests and commands need, and wait until they
# answer:
#   - an AWS emulator on 127.0.0.1:4566 (SQS, S3, DynamoDB, CloudWatch, STS):
#     LocalStack from docker-compose.yml when a Docker engine answers, otherwise
#     moto server from a Python venv inside the project (.venv/);
#   - PostgreSQL: the server MILL_DATABASE_URL names if it answers; otherwise the
#     compose file's PostgreSQL (Docker) or a cluster these scripts own under
#     .local/pgdata on port 15432 (the Debian postgresql package is installed with
#     apt-get when missing and we are root; the server runs as a non-root user);
#   - MariaDB (Debian's mariadb-server) on 127.0.0.1:13306, DuraCloud's MySQL
#     mill database for --duracloud-db (localstack/mariadb.sh);
#   - Debian's chromium, for the console's browser tests, and libxml2-utils
#     (xmllint), for the PREMIS schema test (installed when missing and we
#     are root).
# Idempotent: services that already answer are left alone. localstack/down.sh stops
# only what this script started (it records that under .local/).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
state="$root/.local"
mkdir -p "$state"
# shellcheck source=env.sh
. "$here/env.sh"

MOTO_VERSION=5.2.5
# awscrt lets moto compute S3's CRC64NVME checksums (without it moto stores a
# CRC32 under that name, and multipart full-object checksums are wrong).
AWSCRT_VERSION=0.38.0
PG_MAJOR_WANTED=15

log() { printf 'localstack/up: %s\n' "$*" >&2; }
# shellcheck source=lib.sh
. "$here/lib.sh"

aws_answers() {
  # moto and LocalStack both answer a plain GET on the root.
  curl -s -o /dev/null --max-time 2 "$AWS_ENDPOINT_URL/" 2>/dev/null
}

pg_answers() {
  command -v psql >/dev/null 2>&1 || return 1
  PGCONNECT_TIMEOUT=2 psql "$MILL_DATABASE_URL" -Atqc 'select 1' >/dev/null 2>&1
}

wait_for() { # name seconds command...
  local name=$1 secs=$2; shift 2
  local i
  for ((i = 0; i < secs * 4; i++)); do
    if "$@"; then return 0; fi
    sleep 0.25
  done
  log "$name did not answer within ${secs}s"
  return 1
}

docker_ok() { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }


# ---------------------------------------------------------------- Chromium
# The console's browser tests (internal/app/console) drive Debian's chromium,
# headless. It is installed here, as PostgreSQL is, so that `make test` on a
# fresh machine has it. MILL_NO_CHROMIUM=1 skips this; the browser tests are
# then skipped, or fail under CI=true.
if [[ "${MILL_NO_CHROMIUM:-}" != 1 ]] && ! command -v chromium >/dev/null 2>&1; then
  ensure_apt_packages chromium || log "chromium is not installed: the console's browser tests will be skipped (and fail under CI=true)"
fi

# ---------------------------------------------------------------- axe-core
# The browser tests run axe-core (npm) on every console page. It is
# installed here, pinned, under .local/npm, so that `make test` on a fresh
# machine has it (npm from Debian when missing and we are root).
AXE_CORE_VERSION=4.14.1
if [[ "${MILL_NO_CHROMIUM:-}" != 1 ]] && ! grep -qs "axe v$AXE_CORE_VERSION" "$state/npm/node_modules/axe-core/axe.min.js"; then
  command -v npm >/dev/null 2>&1 || ensure_apt_packages npm || true
  npm install --prefix "$state/npm" --no-save --no-audit --no-fund --loglevel=error "axe-core@$AXE_CORE_VERSION" >/dev/null ||
    log "axe-core is not installed: the console's browser tests will be skipped (and fail under CI=true)"
fi

# ---------------------------------------------------------------- xmllint
# The PREMIS export's test (pkg/evidence) validates its XML against the
# PREMIS 3 schema with xmllint (Debian's libxml2-utils), installed here so
# that `make test` on a fresh machine has it.
command -v xmllint >/dev/null 2>&1 ||
  ensure_apt_packages libxml2-utils || log "xmllint is not installed: the PREMIS schema test will be skipped (and fail under CI=true)"

# ---------------------------------------------------------------- other clouds
# The GCS and Azure Blob emulators (fake-gcs-server, Azurite). Without them
# their suites are skipped, or fail under CI=true.
"$here/clouds.sh" up || log "the GCS or Azure emulator did not start: their tests will be skipped (and fail under CI=true)"

# ---------------------------------------------------------------- MariaDB
# DuraCloud's MySQL mill database (--duracloud-db; localstack/mariadb.sh).
# Without it pkg/duradb's MySQL tests are skipped, or fail under CI=true.
"$here/mariadb.sh" up || log "MariaDB did not start: the DuraCloud database tests will be skipped (and fail under CI=true)"

# ---------------------------------------------------------------- Docker path
if docker_ok && [[ "${MILL_NO_DOCKER:-}" != 1 ]]; then
  if aws_answers && pg_answers; then log "services already answer"; exit 0; fi
  log "starting LocalStack and PostgreSQL with docker compose"
  docker compose -f "$here/docker-compose.yml" up -d --wait
  touch "$state/compose.started"
  wait_for "AWS emulator at $AWS_ENDPOINT_URL" 120 aws_answers
  wait_for "PostgreSQL at $MILL_DATABASE_URL" 60 pg_answers
  exit 0
fi

# ---------------------------------------------------------------- moto path
command -v curl >/dev/null 2>&1 || ensure_apt_packages curl
if aws_answers; then
  log "AWS emulator already answers at $AWS_ENDPOINT_URL"
else
  venv="$root/.venv"
  if [[ ! -x "$venv/bin/moto_server" ]] || ! "$venv/bin/python" -c "import moto,awscrt,sys; sys.exit(moto.__version__ != '$MOTO_VERSION')" 2>/dev/null; then
    log "installing moto[server]==$MOTO_VERSION and awscrt==$AWSCRT_VERSION into $venv"
    [[ -x "$venv/bin/pip" ]] || python3 -m venv "$venv" || { ensure_apt_packages python3-venv && python3 -m venv "$venv"; }
    "$venv/bin/pip" install -q --disable-pip-version-check "moto[server]==$MOTO_VERSION" "awscrt==$AWSCRT_VERSION"
  fi
  port=${AWS_ENDPOINT_URL##*:}; port=${port%%/*}
  [[ "$port" =~ ^[0-9]+$ ]] || port=4566
  log "starting moto server on 127.0.0.1:$port (log: .local/moto.log)"
  nohup "$venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$state/moto.log" 2>&1 &
  echo $! >"$state/moto.pid"
  wait_for "moto server" 60 aws_answers
  assert_loopback "moto server" "$(cat "$state/moto.pid")"
fi

# ---------------------------------------------------------------- PostgreSQL
if pg_answers; then
  log "PostgreSQL already answers at $MILL_DATABASE_URL"
  exit 0
fi
command -v psql >/dev/null 2>&1 || ensure_apt_packages postgresql-client
pgbin=""
for d in /usr/lib/postgresql/*/bin; do [[ -x "$d/pg_ctl" ]] && pgbin=$d; done
if [[ -z "$pgbin" ]]; then
  ensure_apt_packages postgresql
  for d in /usr/lib/postgresql/*/bin; do [[ -x "$d/pg_ctl" ]] && pgbin=$d; done
fi
[[ -n "$pgbin" ]] || { log "no PostgreSQL server binaries found (wanted major $PG_MAJOR_WANTED)"; exit 1; }

pgdata="$state/pgdata"
pgrun="$state/pgrun"
as_pg=()
if [[ $(id -u) -eq 0 ]]; then
  # The server refuses to run as root: run it as the postgres system user.
  id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
  as_pg=(runuser -u postgres --)
fi
mkdir -p "$pgdata" "$pgrun"
[[ ${#as_pg[@]} -gt 0 ]] && chown postgres:postgres "$pgdata" "$pgrun" && chmod 700 "$pgdata"
if [[ ! -f "$pgdata/PG_VERSION" ]]; then
  log "initialising a PostgreSQL cluster in .local/pgdata"
  "${as_pg[@]}" "$pgbin/initdb" -D "$pgdata" -U postgres --auth=trust -E UTF8 >"$state/initdb.log" 2>&1
fi
log "starting PostgreSQL on 127.0.0.1:$MILL_PG_PORT (log: .local/postgres.log)"
touch "$state/postgres.log"
[[ ${#as_pg[@]} -gt 0 ]] && chown postgres:postgres "$state/postgres.log"
"${as_pg[@]}" "$pgbin/pg_ctl" -D "$pgdata" -l "$state/postgres.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -p $MILL_PG_PORT -c unix_socket_directories=$pgrun -c max_connections=200 -c fsync=off" start >/dev/null
echo "$pgbin" >"$state/postgres.started"
pg_up() { "${as_pg[@]}" "$pgbin/pg_isready" -q -h 127.0.0.1 -p "$MILL_PG_PORT"; }
wait_for "PostgreSQL" 60 pg_up
assert_loopback PostgreSQL "$(head -1 "$pgdata/postmaster.pid")"
if ! "${as_pg[@]}" psql -h 127.0.0.1 -p "$MILL_PG_PORT" -U postgres -Atqc "select 1 from pg_database where datname='mill'" | grep -q 1; then
  "${as_pg[@]}" psql -h 127.0.0.1 -p "$MILL_PG_PORT" -U postgres -qc "create database mill" >/dev/null
fi
wait_for "PostgreSQL at $MILL_DATABASE_URL" 30 pg_answers
log "ready"
