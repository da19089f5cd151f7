#!/usr/bin/env bash
# Scan the module and its dependencies with govulncheck (make lint runs
# this). Against the live database at vuln.go.dev when it answers;
# otherwise against the offline snapshot in scripts/vulndb/snapshot.jsonl,
# saying how old it is. Either way a known vulnerability reachable from our
# code fails the run.
#
# Refresh the snapshot on a machine that can reach GitHub or vuln.go.dev:
#   git clone --depth 1 https://github.com/golang/vulndb /tmp/vulndb
#   go run ./scripts/vulndb snapshot -from /tmp/vulndb/data/osv \
#     -source "github.com/golang/vulndb data/osv at $(git -C /tmp/vulndb log -1 --format='%h (%cs)')"
#
# MILL_VULNDB=offline forces the snapshot; MILL_VULNDB=live forces vuln.go.dev.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
# v1.1.4: later releases need a golang.org/x/telemetry version the module
# proxy reachable from these machines does not serve.
GOVULNCHECK=golang.org/x/vuln/cmd/govulncheck@v1.1.4
mode=${MILL_VULNDB:-auto}
if [[ $mode == auto ]]; then
  if curl -s -m 5 -o /dev/null https://vuln.go.dev/index/db.json; then mode=live; else mode=offline; fi
fi
case $mode in
  live)
    echo "govulncheck: scanning against vuln.go.dev"
    go run "$GOVULNCHECK" ./...
    ;;
  offline)
    db=$(mktemp -d)
    trap 'rm -rf "$db"' EXIT
    echo "govulncheck: vuln.go.dev is not reachable (or MILL_VULNDB=offline); scanning against the snapshot"
    go run ./scripts/vulndb extract -dir "$db"
    go run "$GOVULNCHECK" -db "file://$db" ./...
    ;;
  *)
    echo "govulncheck: MILL_VULNDB must be auto, live or offline, not $mode" >&2
    exit 2
    ;;
esac
