#!/usr/bin/env bash
# Lint every CloudFormation template under infra/ with cfn-lint, pinned, from
# a venv the script owns in the project root (.venv-cfnlint/, gitignored).
# Idempotent: the venv is created and cfn-lint installed only when missing or
# at another version; a run with it installed takes a few seconds.
# Exit status: 0 when every template passes with no findings; cfn-lint's own
# non-zero status otherwise. Informational checks count too. No rule is
# suppressed; a rule that ever must be goes in infra/.cfnlintrc (read from the
# working directory) with its reason, and in infra/README.md.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

CFN_LINT_VERSION=1.58.0
venv="$root/.venv-cfnlint"

log() { printf 'infra/lint: %s\n' "$*" >&2; }

installed_version() {
  "$venv/bin/python" - <<'PY' 2>/dev/null
from importlib.metadata import version
print(version("cfn-lint"))
PY
}

if [[ ! -x "$venv/bin/cfn-lint" ]] || [[ "$(installed_version)" != "$CFN_LINT_VERSION" ]]; then
  log "installing cfn-lint==$CFN_LINT_VERSION into $venv"
  if ! python3 -m venv "$venv" 2>/dev/null; then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
      DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
      python3 -m venv "$venv"
    else
      log "python3 -m venv failed: install python3-venv"
      exit 1
    fi
  fi
  "$venv/bin/pip" install -q --disable-pip-version-check "cfn-lint==$CFN_LINT_VERSION"
fi

cd "$here"
shopt -s nullglob
templates=(*.yaml)
if [[ ${#templates[@]} -eq 0 ]]; then
  log "no templates found in infra/"
  exit 1
fi
log "cfn-lint $CFN_LINT_VERSION: ${templates[*]}"
# --include-checks I: informational findings count too.
"$venv/bin/cfn-lint" --include-checks I -- "${templates[@]}"
log "no findings"
