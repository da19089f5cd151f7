#!/usr/bin/env bash
# LocalStack in host mode (no Docker), beside moto, for `make test/localstack`.
#
#   localstack/host.sh up     install what is missing, start LocalStack, wait until it answers
#   localstack/host.sh down   stop the LocalStack this script started, and nothing else
#   localstack/host.sh env    print the environment that points the tests at it
#
# It listens on 127.0.0.1:$MILL_LOCALSTACK_PORT (default 4567): moto keeps
# 4566. Everything it installs or writes stays inside the project:
#   .venv-localstack/        localstack-core[runtime] from PyPI (Python >= 3.13), with
#                            the versions in localstack/requirements-localstack.txt
#   .local/localstack/fs/    LocalStack's FILESYSTEM_ROOT: its packages and state
#   .local/localstack.{pid,log}
# LocalStack would download DynamoDB Local and a JDK for its DynamoDB on first
# use; neither download is reachable from here, so this script provides both
# from package registries instead: a JDK from Debian (openjdk-17-jdk-headless)
# and DynamoDB Local from Maven Central (localstack/dynamodb-local/pom.xml). See
# docs/DEVELOPMENT.md (Emulators) for every LocalStack quirk Mill works around.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
state="$root/.local"

# The LocalStack release under test; localstack/docker-compose.yml pins the
# same one. 4.14.0 is the last community release that starts without an auth
# token (later images require one).
LOCALSTACK_VERSION=4.14.0
# DynamoDB Local 2.x needs Java 17 or later.
JDK_PACKAGE=openjdk-17-jdk-headless
: "${MILL_LOCALSTACK_PORT:=4567}"
venv="$root/.venv-localstack"
fsroot="$state/localstack/fs"
pidfile="$state/localstack.pid"
logfile="$state/localstack.log"
endpoint="http://127.0.0.1:$MILL_LOCALSTACK_PORT"

log() { printf 'localstack/host: %s\n' "$*" >&2; }
# shellcheck source=lib.sh
. "$here/lib.sh"

answers() {
  curl -sf -o /dev/null --max-time 2 "$endpoint/_localstack/health" 2>/dev/null
}


# LocalStack 4.14 needs Python 3.13 or later (its code uses 3.12 syntax and
# 3.13 library functions, although its package metadata says 3.10). Debian 12
# ships 3.11.
python_ok() { "$1" -c 'import sys, ssl, sqlite3; sys.exit(sys.version_info < (3, 13))' 2>/dev/null; }

python_for_venv() {
  local py
  for py in python3.14 python3.13 python3 \
    "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[3-9]*/bin/python3 \
    "$state/python/bin/python3"; do
    if command -v "$py" >/dev/null 2>&1 && python_ok "$py"; then
      command -v "$py"
      return 0
    fi
  done
  return 1
}

# build_python builds CPython from Debian's own source package of it (from
# Debian 13, whose python3.13 Debian 12 does not ship) into .local/python,
# with Debian 12's compilers and libraries: about 5 minutes on 2 cores, once.
# A private apt configuration under .local/ reads the source index; the
# machine's apt sources are not touched.
build_python() {
  local suite=trixie pkg=python3.13
  log "no Python 3.13 on this machine: building $pkg from Debian's $suite source package into .local/python (once, ~5 min)"
  ensure_apt_packages build-essential libssl-dev libffi-dev zlib1g-dev libsqlite3-dev libbz2-dev liblzma-dev xz-utils
  local apt="$state/apt-src" src
  rm -rf "$apt" && mkdir -p "$apt/lists/partial" "$apt/src"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" >"$apt/sources.list"
  local opts=(-q -o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$apt/lists")
  apt-get "${opts[@]}" update >/dev/null
  (cd "$apt/src" && apt-get "${opts[@]}" source --download-only "$pkg" >/dev/null 2>&1)
  src=$(ls "$apt/src"/"${pkg}"_*.orig.tar.xz)
  tar -C "$apt/src" -xf "$src"
  (
    cd "$apt"/src/Python-*/
    ./configure -q --prefix="$state/python" >"$state/python-build.log" 2>&1
    make -s -j"$(nproc)" >>"$state/python-build.log" 2>&1
    make -s install >>"$state/python-build.log" 2>&1
  ) || { log "building Python failed (see .local/python-build.log)"; return 1; }
  rm -rf "$apt"
}

install_localstack() {
  # The venv is current when it has this release, installed with the
  # constraints file as it is now.
  local stamp="$venv/.mill-constraints"
  if [[ -x "$venv/bin/python" ]] && python_ok "$venv/bin/python" && cmp -s "$stamp" "$here/requirements-localstack.txt" &&
    "$venv/bin/python" -c "import sys, localstack.version as v; sys.exit(v.__version__ != '$LOCALSTACK_VERSION')" 2>/dev/null; then
    return 0
  fi
  local py
  py=$(python_for_venv) || { build_python && py=$(python_for_venv); } ||
    { log "no Python 3.13 or later found, and none could be built"; return 1; }
  log "installing localstack-core[runtime]==$LOCALSTACK_VERSION into ${venv#"$root"/} ($("$py" --version))"
  rm -rf "$venv"
  "$py" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -c "$here/requirements-localstack.txt" \
    "localstack-core[runtime]==$LOCALSTACK_VERSION"
  cp "$here/requirements-localstack.txt" "$stamp"
}

# LocalStack looks for its packages under FILESYSTEM_ROOT/var/lib/localstack/lib
# and installs them there when they are missing.
libs="$fsroot/var/lib/localstack/lib"

# jdk is Debian's OpenJDK 17 (java, javac, jar), set by install_java.
jdk=""

install_java() {
  # LocalStack asks for "Java 21" for DynamoDB Local (any JDK >= 17 runs it)
  # and treats <libs>/java/21/bin/java as installed.
  ensure_apt_packages "$JDK_PACKAGE"
  jdk=/usr/lib/jvm/java-17-openjdk-$(dpkg --print-architecture)
  [[ -x "$jdk/bin/javac" ]] || { log "$JDK_PACKAGE installed no JDK at $jdk"; return 1; }
  mkdir -p "$libs/java"
  ln -sfn "$jdk" "$libs/java/21"
}

install_dynamodb_local() {
  local dir="$libs/dynamodb-local/2"
  [[ -f "$dir/DynamoDBLocal.jar" && -f "$dir/ddb-local-loader-0.1.jar" ]] && return 0
  command -v mvn >/dev/null 2>&1 || ensure_apt_packages maven
  log "installing DynamoDB Local from Maven Central into ${dir#"$root"/}"
  local tmp
  tmp=$(mktemp -d)
  rm -rf "$dir"
  mkdir -p "$dir/DynamoDBLocal_lib"
  mvn -q -B -f "$here/dynamodb-local/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$dir/DynamoDBLocal_lib" -Dmdep.stripVersion=true -DexcludeTypes=dll,dylib >"$tmp/mvn.log" 2>&1 ||
    { cat "$tmp/mvn.log" >&2; rm -rf "$tmp"; return 1; }
  # LocalStack runs `java -jar DynamoDBLocal.jar` with DynamoDBLocal_lib as
  # java.library.path: a launcher jar whose manifest names the main class
  # and every library (sqlite4java finds libsqlite4java-linux-amd64.so there).
  {
    echo "Main-Class: com.amazonaws.services.dynamodbv2.local.main.ServerRunner"
    printf 'Class-Path:'
    # (a continuation line's first space is dropped: two keep them apart)
    (cd "$dir" && for j in DynamoDBLocal_lib/*.jar; do printf '  %s\n' "$j"; done)
  } >"$tmp/manifest.txt"
  "$jdk/bin/jar" --create --file "$dir/DynamoDBLocal.jar" --manifest "$tmp/manifest.txt"
  # The javaagent LocalStack passes (see dynamodb-local/NoopAgent.java).
  mkdir -p "$tmp/classes"
  "$jdk/bin/javac" -d "$tmp/classes" "$here/dynamodb-local/NoopAgent.java"
  printf 'Premain-Class: NoopAgent\n' >"$tmp/agent.txt"
  "$jdk/bin/jar" --create --file "$dir/ddb-local-loader-0.1.jar" --manifest "$tmp/agent.txt" -C "$tmp/classes" .
  rm -rf "$tmp"
}

up() {
  mkdir -p "$state"
  if answers; then
    log "LocalStack already answers at $endpoint"
    return 0
  fi
  command -v curl >/dev/null 2>&1 || ensure_apt_packages curl
  install_localstack
  install_java
  install_dynamodb_local
  log "starting LocalStack $LOCALSTACK_VERSION on 127.0.0.1:$MILL_LOCALSTACK_PORT (log: .local/localstack.log)"
  # GATEWAY_LISTEN: its own port. DNS_ADDRESS=0: no DNS server on port 53.
  # SKIP_SSL_CERT_DOWNLOAD, DISABLE_EVENTS: no calls to the internet.
  # EAGER_SERVICE_LOADING: start every service (DynamoDB Local too) now, so a
  # broken install fails here rather than in the first test.
  # OVERRIDE_IN_DOCKER=0: LocalStack takes a container sandbox for its own
  # Docker image and would then use /var/lib/localstack and /tmp/localstack;
  # host mode keeps everything under FILESYSTEM_ROOT.
  # SQS_ENDPOINT_STRATEGY=path: queue URLs on 127.0.0.1 (the default names a
  # host under localhost.localstack.cloud, which needs public DNS).
  # LD_PRELOAD: LocalStack's gateway ignores GATEWAY_LISTEN's host and
  # DynamoDB Local has no bind address; the shim keeps both on loopback.
  # JAVA_TOOL_OPTIONS: DynamoDB Local on IPv4 sockets, so the shim binds it to
  # 127.0.0.1, the address LocalStack reaches it on (not ::1).
  # SQS_DISABLE_CLOUDWATCH_METRICS: with CloudWatch among SERVICES, LocalStack
  # publishes two metrics (NumberOfMessagesSent, SentMessageSize) per message
  # sent, each a PutMetricData over HTTP to itself, queued behind three
  # threads: 20,000 messages cost it ~2 minutes of CPU, most of it in the 6
  # minutes after they were sent (~60 ms per SendMessageBatch of 10, against
  # 1.0-1.3 ms without), slowing every test that came after. The cost: no
  # AWS/SQS metrics of LocalStack's queues in its CloudWatch (no Mill test
  # reads them; millctl queues --no-age in the tests, alarms only created).
  # LOG_LEVEL_OVERRIDES: no INFO line per request ("AWS sqs.SendMessageBatch
  # => 200"), formatted and written while the request waits: ~20 % of
  # LocalStack's CPU per request (GetQueueUrl 1.06 -> 0.80 ms, SendMessageBatch
  # of 10 1.54 -> 1.28 ms, measured on a loaded 2-core machine). Failures
  # inside LocalStack are still logged, answers (errors too) no longer;
  # LOG_LEVEL_OVERRIDES=localstack.request.aws=INFO brings them back.
  local shim
  shim=$(build_loopback_shim "$state")
  (
    cd "$state"
    env FILESYSTEM_ROOT="$fsroot" OVERRIDE_IN_DOCKER=0 \
      LD_PRELOAD="$shim" JAVA_TOOL_OPTIONS="-Djava.net.preferIPv4Stack=true" \
      GATEWAY_LISTEN="127.0.0.1:$MILL_LOCALSTACK_PORT" \
      LOCALSTACK_HOST="127.0.0.1:$MILL_LOCALSTACK_PORT" \
      SERVICES=sqs,s3,dynamodb,cloudwatch,sts,cloudformation,sns \
      EAGER_SERVICE_LOADING=1 \
      SQS_ENDPOINT_STRATEGY=path \
      SQS_DISABLE_CLOUDWATCH_METRICS=1 \
      LOG_LEVEL_OVERRIDES="${LOG_LEVEL_OVERRIDES:-localstack.request.aws=WARNING,localstack.request.http=WARNING}" \
      DNS_ADDRESS=0 \
      SKIP_SSL_CERT_DOWNLOAD=1 \
      DISABLE_EVENTS=1 \
      LOCALSTACK_TELEMETRY_DISABLED=1 \
      DYNAMODB_IN_MEMORY=1 \
      nohup "$venv/bin/python" -m localstack.runtime.main >"$logfile" 2>&1 &
    echo $! >"$pidfile"
  )
  local i
  for ((i = 0; i < 480; i++)); do
    if answers && ready; then
      assert_loopback LocalStack "$(cat "$pidfile")" || return 1
      log "ready"
      return 0
    fi
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      log "LocalStack exited; the end of its log:"
      tail -40 "$logfile" >&2
      rm -f "$pidfile"
      return 1
    fi
    sleep 0.25
  done
  log "LocalStack did not become ready within 120s; the end of its log:"
  tail -40 "$logfile" >&2
  return 1
}

# ready: every service LocalStack was asked for is running.
ready() {
  local health
  health=$(curl -sf --max-time 2 "$endpoint/_localstack/health") || return 1
  "$venv/bin/python" -c '
import json, sys
s = json.loads(sys.argv[1])["services"]
want = "sqs s3 dynamodb cloudwatch sts cloudformation".split()
sys.exit(0 if all(s.get(n) == "running" for n in want) else 1)
' "$health"
}

down() { stop_pidfile LocalStack "$pidfile" 20; }

case "${1:-}" in
  up) up ;;
  down) down ;;
  env) printf 'export AWS_ENDPOINT_URL=%q\n' "$endpoint" ;;
  *)
    echo "usage: localstack/host.sh up|down|env" >&2
    exit 2
    ;;
esac
