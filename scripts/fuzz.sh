#!/usr/bin/env bash
# Runs every Fuzz* target of the module for FUZZTIME each (default 30s) and
# prints a summary. `make fuzz` runs this script.
#
# Environment:
#   FUZZTIME   -fuzztime of each target (default 30s)
#   FUZZ       only targets whose "pkg Target" matches this extended regexp
# A target that finds a failure leaves its input under the package's
# testdata/fuzz/<Target>/ (go test's behaviour): inspect it, fix the bug, and
# commit the input as a regression seed. The script runs every target even
# after a failure and exits 1 when any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}

# Packages whose test files declare a fuzz target.
mapfile -t pkgs < <(grep -rlE --include='*_test.go' '^func Fuzz[A-Z_]' . 2>/dev/null |
  grep -vE '/(testdata|vendor)/' | xargs -r -n1 dirname | sort -u)
targets=()
for p in "${pkgs[@]}"; do
  while read -r f; do
    [[ $f == Fuzz* ]] && targets+=("$p $f")
  done < <($GO test -list '^Fuzz' "$p" 2>/dev/null)
done
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "fuzz: no fuzz targets found" >&2
  exit 1
fi
failed=()
ran=0
for t in "${targets[@]}"; do
  if [[ -n ${FUZZ:-} ]] && ! [[ $t =~ $FUZZ ]]; then
    continue
  fi
  read -r p f <<<"$t"
  echo "== $p $f ($FUZZTIME)"
  ran=$((ran + 1))
  if ! $GO test -run '^$' -fuzz "^${f}\$" -fuzztime "$FUZZTIME" "$p"; then
    failed+=("$t")
  fi
done
echo
echo "fuzz: $ran targets run for $FUZZTIME each, ${#failed[@]} failed"
for t in "${failed[@]}"; do
  echo "  FAILED: $t"
done
[[ ${#failed[@]} -eq 0 ]]
