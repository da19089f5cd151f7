#!/usr/bin/env bash
# MariaDB (Debian's mariadb-server), the stand-in for DuraCloud's MySQL mill
# database that Mill mirrors its manifest, bit reports and space statistics
# into when --duracloud-db is set (pkg/duradb). Listens on 127.0.0.1 only, on
# $MILL_MYSQL_PORT (13306: outside the ephemeral range), with its own data
# directory .local/mariadb, run as the mysql system user; a database
# `duracloud_mill` and a user mill/mill that may create the tests' own
# databases. MILL_MYSQL_URL (localstack/env.sh) is its DSN.
# Usage: localstack/mariadb.sh up|down. Idempotent: a server that already
# answers is left alone; down stops only what up started (.local/mariadb.pid).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
state="$root/.local"
mkdir -p "$state"
# shellcheck source=env.sh
. "$here/env.sh"
log() { printf 'localstack/mariadb: %s\n' "$*" >&2; }
# shellcheck source=lib.sh
. "$here/lib.sh"

data="$state/mariadb"
pidfile="$state/mariadb.pid"
rundir="$state/mariadbrun"
sock="$rundir/mariadb.sock"

answers() {
  [[ -S "$sock" ]] || return 1
  mariadb-admin --no-defaults --socket="$sock" -uroot --connect-timeout=2 ping >/dev/null 2>&1 ||
    mariadb-admin --no-defaults -h127.0.0.1 -P"$MILL_MYSQL_PORT" -umill -pmill --connect-timeout=2 ping >/dev/null 2>&1
}

up() {
  if answers; then log "MariaDB already answers on 127.0.0.1:$MILL_MYSQL_PORT"; return 0; fi
  command -v mariadbd >/dev/null 2>&1 || [[ -x /usr/sbin/mariadbd ]] || ensure_apt_packages mariadb-server
  command -v ss >/dev/null 2>&1 || ensure_apt_packages iproute2
  local run_as=()
  if [[ $(id -u) -eq 0 ]]; then
    id mysql >/dev/null 2>&1 || useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin mysql
    run_as=(--user=mysql)
  fi
  mkdir -p "$data" "$rundir"
  [[ ${#run_as[@]} -gt 0 ]] && chown mysql:mysql "$data" "$rundir"
  if [[ ! -d "$data/mysql" ]]; then
    log "initialising a MariaDB data directory in .local/mariadb"
    mariadb-install-db --no-defaults "${run_as[@]}" --datadir="$data" --auth-root-authentication-method=socket \
      --skip-test-db >"$state/mariadb-install.log" 2>&1
  fi
  log "starting MariaDB on 127.0.0.1:$MILL_MYSQL_PORT (log: .local/mariadb.log)"
  touch "$state/mariadb.log"
  [[ ${#run_as[@]} -gt 0 ]] && chown mysql:mysql "$state/mariadb.log"
  nohup /usr/sbin/mariadbd --no-defaults "${run_as[@]}" --datadir="$data" --bind-address=127.0.0.1 \
    --port="$MILL_MYSQL_PORT" --socket="$sock" --pid-file="$data/mariadbd.pid" --log-error="$state/mariadb.log" \
    --skip-name-resolve --innodb-flush-log-at-trx-commit=0 --innodb-buffer-pool-size=64M \
    --character-set-server=utf8mb3 --collation-server=utf8mb3_general_ci >/dev/null 2>&1 &
  echo $! >"$pidfile"
  local i
  for ((i = 0; i < 240; i++)); do
    answers && break
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then log "MariaDB exited: see .local/mariadb.log"; rm -f "$pidfile"; return 1; fi
    sleep 0.25
  done
  answers || { log "MariaDB did not answer within 60s"; return 1; }
  assert_loopback MariaDB "$(cat "$pidfile")"
  mariadb --no-defaults --socket="$sock" -uroot <<SQL
CREATE DATABASE IF NOT EXISTS duracloud_mill CHARACTER SET utf8mb3;
CREATE USER IF NOT EXISTS 'mill'@'127.0.0.1' IDENTIFIED BY 'mill';
CREATE USER IF NOT EXISTS 'mill'@'localhost' IDENTIFIED BY 'mill';
GRANT ALL PRIVILEGES ON *.* TO 'mill'@'127.0.0.1';
GRANT ALL PRIVILEGES ON *.* TO 'mill'@'localhost';
SQL
  log "ready"
}

down() {
  stop_pidfile MariaDB "$pidfile" 30
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
