#!/usr/bin/env bash
# Runs every benchmark of the module once (-benchtime 1x) against the local
# services and prints one summary table (internal/testkit/benchtable): SQS requests
# per task, throughput against raw SDK / md5sum baselines, peak memory for
# big objects; it writes the same table, with the date, the machine and the
# settings, to docs/PERFORMANCE.md. `make bench` runs this script.
#
# Its sizes of the long runs (below, "make bench:") keep the whole run under
# 15 minutes on a shared 2-core machine while still showing each scaling
# (a ratio between two sizes); where an acceptance size is larger, it is
# given with the setting and is each benchmark's own default (go test
# -bench alone). The acceptance run, about an hour:
#   MILL_BENCH_DUP_STATE_SPACES=2000,20000 MILL_BENCH_SEARCH_ROWS=1000000 \
#   MILL_BENCH_FIXITY_COPIES=1000000 MILL_BENCH_FLAT_ITEMS=10000,100000,1000000 \
#   MILL_BENCH_RACE_SECONDS=30 MILL_BENCH_RATE_BYTES=1073741824 \
#   MILL_BENCH_SHAPED_BYTES=268435456 make bench
# (and the larger MILL_BENCH_ITEMS, MILL_BENCH_S3_ITEMS, MILL_BENCH_BITLOG_ROWS
# below). The 1 GiB objects (MILL_BENCH_BIG_BYTES) stay 1 GiB: their peak
# memory rows prove the bound for an object of any size.
#
# Environment:
#   MILL_BENCH_BIG_BYTES  size of the "1 GiB" objects (default 1073741824);
#                         e.g. MILL_BENCH_BIG_BYTES=$((64<<20)) for a quick run
#   MILL_BENCH_RATE_BYTES size of the object of the throughput-only
#                         benchmarks: the DuraCloud migration, the copies
#                         S3 → GCS and S3 → Azure (make bench: 268435456;
#                         acceptance MILL_BENCH_BIG_BYTES, 1 GiB, about 3
#                         minutes more)
#   MILL_BENCH_SHAPE_RATE  per-connection cap of the S3-like proxy of
#                         test/transfer, bytes/s each way (default 4 MiB/s)
#   MILL_BENCH_SHAPE_LATENCY_MS its per-request latency (default 20)
#   MILL_BENCH_S3_ENDPOINT the S3 behind that proxy and of processors/dup's
#                         streamed copy, both ranged reads (default: LocalStack at
#                         127.0.0.1:$MILL_LOCALSTACK_PORT when it answers —
#                         localstack/host.sh up — else AWS_ENDPOINT_URL; moto
#                         reads a whole object for every ranged GET, which
#                         caps parallel reads below the shaping)
#   MILL_BENCH_SQS_ENDPOINT the SQS of the console's dead-letter benchmark
#                         (5,000 dead letters), of Workman's NOOP throughput
#                         and six-vs-one drain (default: LocalStack when it answers, as
#                         above, else AWS_ENDPOINT_URL; moto answers a
#                         receive in time proportional to the queue's depth,
#                         so its drains take minutes and the start, where
#                         the six queues differ, is lost in them)
#   MILL_BENCH_BITLOG_ROWS rows of the bit log retention benchmark (default
#                         200000; the acceptance size is 10000000, which
#                         takes a few minutes to write and about 4 GB)
#   MILL_BENCH_VERDICTS   copies of the space whose bit verdicts are read
#                         (default 1000000)
#   MILL_BENCH_FIXITY_COPIES copies of the fixity coverage benchmark's large
#                         space (make bench: 300000; acceptance 1000000,
#                         whose writing takes a minute more; its seconds
#                         are given per million copies)
#   MILL_BENCH_SEARCH_ROWS content-index rows of the console's item search
#                         benchmark (make bench: 200000; acceptance
#                         1000000, two minutes of writing here)
#   MILL_BENCH_EVIDENCE_EVENTS events of the evidence log benchmark
#                         (default 100000; its verification time is given
#                         per million events, extrapolated)
#   MILL_BENCH_ENQUEUE_TASKS tasks of each run of the producer enqueue
#                         benchmark (one batch in flight, then each of
#                         MILL_BENCH_ENQUEUE_INFLIGHT; default 10000; on
#                         MILL_BENCH_SQS_ENDPOINT)
#   MILL_BENCH_ENQUEUE_INFLIGHT its batches in flight after the sequential
#                         baseline, comma-separated (default 8,16,32)
#   MILL_BENCH_FLAT_ITEMS sizes of the fs walk over one flat directory,
#                         comma-separated (make bench: 10000,100000,300000;
#                         acceptance 10000,100000,1000000, whose 2,000,000
#                         directory entries take 3 minutes to create here)
#   MILL_BENCH_RACE_SECONDS racing time of Workman's six-vs-one drain
#                         (make bench: 10, two races; default 30, six)
#   MILL_BENCH_MIGRATE_ITEMS 4 KiB items of the DuraCloud migration benchmark
#                         (default 500; its big item is MILL_BENCH_RATE_BYTES)
#   MILL_BENCH_ITEMS      sizes of the space the dupproducer and bitproducer
#                         binaries run over, as processes, on an fs store
#                         (test/scale; default 10000,100000; acceptance
#                         MILL_BENCH_ITEMS=10000,100000,1000000: about 10
#                         more minutes, seeding 2 M links included)
#   MILL_BENCH_S3_ITEMS   the same on S3 at MILL_BENCH_S3_ENDPOINT (default
#                         10000: seeding LocalStack runs at a few hundred
#                         objects/s here, about an hour per million)
#   MILL_BENCH_REPORT_ITEMS sizes of the space of the BIT_REPORT benchmark
#                         (test/scale: the real Workman's report; default
#                         10000,100000; acceptance 10000,100000,1000000)
#   MILL_BENCH_REPORT_S3_ITEMS the same on S3 at MILL_BENCH_S3_ENDPOINT
#                         (default: not run)
#   MILL_BENCH_SHAPED_BYTES size of the object of the shaped transfers
#                         (test/transfer; make bench: 134217728, 16 parts
#                         of 8 MiB, four per stream; default 268435456:
#                         ten transfers at 2-16 MB/s, about 5 minutes; at
#                         1 GiB they take 20 minutes)
#   MILL_BENCH_DUP_STATE_SPACES space counts of the dupproducer state
#                         benchmark on moto, comma-separated multiples of
#                         100 (make bench: 200,2000; acceptance 2000,20000,
#                         3 to 9 minutes more)
#   BENCH                 -bench pattern (default .)
#   BENCH_TIMEOUT         -test.timeout of each package (default 30m)
#   BENCH_BIN             where the test binaries are built (default
#                         .local/benchbin)
#   BENCH_LOG             where the raw go test output is kept
#                         (default .local/bench.log)
#   BENCH_DOC             where the Markdown table is written (default
#                         docs/PERFORMANCE.md for a full run; with BENCH set,
#                         a partial run, .local/PERFORMANCE.md, so a partial
#                         run never replaces the record)
# The raw output is also printed as it comes. Exit status: 1 when a package
# failed or did not build (its rows show as n/a in the table with the reason).
set -uo pipefail
began=$SECONDS
cd "$(dirname "$0")/.."
GO=${GO:-go}
if [[ -f localstack/env.sh ]]; then
  # shellcheck source=/dev/null
  source localstack/env.sh
fi
export MILL_BENCH_BIG_BYTES=${MILL_BENCH_BIG_BYTES:-$((1 << 30))}
# processors/dup reads its own variable; one knob sizes every big object.
export MILL_BENCH_DUP_BYTES=${MILL_BENCH_DUP_BYTES:-$MILL_BENCH_BIG_BYTES}
# make bench's sizes of the long runs (see above); docs/PERFORMANCE.md
# lists them with the run.
export MILL_BENCH_DUP_STATE_SPACES=${MILL_BENCH_DUP_STATE_SPACES:-200,2000}
export MILL_BENCH_SEARCH_ROWS=${MILL_BENCH_SEARCH_ROWS:-200000}
export MILL_BENCH_FIXITY_COPIES=${MILL_BENCH_FIXITY_COPIES:-300000}
export MILL_BENCH_FLAT_ITEMS=${MILL_BENCH_FLAT_ITEMS:-10000,100000,300000}
export MILL_BENCH_RACE_SECONDS=${MILL_BENCH_RACE_SECONDS:-10}
export MILL_BENCH_RATE_BYTES=${MILL_BENCH_RATE_BYTES:-$((256 << 20))}
export MILL_BENCH_SHAPED_BYTES=${MILL_BENCH_SHAPED_BYTES:-$((128 << 20))}
# rclone is the shaped transfer benchmark's reference (Debian's package).
if ! command -v rclone >/dev/null 2>&1; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "bench: installing rclone (Debian package) for the shaped transfer benchmark" >&2
    apt-get install -y -qq rclone >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq rclone >/dev/null 2>&1; } ||
      echo "bench: could not install rclone; its row will be n/a" >&2
  else
    echo "bench: rclone is not installed (apt-get install rclone); its row will be n/a" >&2
  fi
fi
ls_endpoint=http://127.0.0.1:${MILL_LOCALSTACK_PORT:-4567}
if curl -sf -o /dev/null --max-time 2 "$ls_endpoint/_localstack/health" 2>/dev/null; then
  export MILL_BENCH_S3_ENDPOINT=${MILL_BENCH_S3_ENDPOINT:-$ls_endpoint}
  export MILL_BENCH_SQS_ENDPOINT=${MILL_BENCH_SQS_ENDPOINT:-$ls_endpoint}
else
  [[ -n ${MILL_BENCH_S3_ENDPOINT:-} ]] ||
    echo "bench: LocalStack does not answer at $ls_endpoint: the big transfers run on moto, whose ranged GETs cap them (localstack/host.sh up)" >&2
  [[ -n ${MILL_BENCH_SQS_ENDPOINT:-} ]] ||
    echo "bench: LocalStack does not answer at $ls_endpoint: the console's dead-letter benchmark and Workman's six-vs-one drain run on moto, whose receives slow with the queue's depth" >&2
fi
log=${BENCH_LOG:-.local/bench.log}
mkdir -p "$(dirname "$log")"

# Packages that declare a benchmark (test files only; vendored and
# testdata trees excluded).
mapfile -t pkgs < <(grep -rlE --include='*_test.go' '^func Benchmark[A-Z_]' . 2>/dev/null |
  grep -vE '/(testdata|vendor)/' | xargs -r -n1 dirname | sort -u)
if [[ ${#pkgs[@]} -eq 0 ]]; then
  echo "bench: no benchmarks found" >&2
  exit 1
fi
echo "bench: ${#pkgs[@]} packages with benchmarks: ${pkgs[*]}" >&2
echo "bench: MILL_BENCH_BIG_BYTES=$MILL_BENCH_BIG_BYTES MILL_BENCH_BITLOG_ROWS=${MILL_BENCH_BITLOG_ROWS:-200000}" >&2

# The test binaries (and benchtable) are built first, two at a time, each
# to its own file: the measured run below then only runs them. (go test
# -p 1 would compile and link one package at a time, a third of the run
# on a loaded machine, and go test relinks a test binary on every run.)
bin=${BENCH_BIN:-.local/benchbin}
rm -rf "$bin" && mkdir -p "$bin"
echo "bench: building the test binaries into $bin" >&2
binname() { local p=${1#./}; echo "${p//\//_}.test"; }
export GO bin
export -f binname
printf '%s\n' "${pkgs[@]}" | xargs -P "${BENCH_BUILD_JOBS:-2}" -I{} bash -c \
  '$GO test -c -o "$bin/$(binname {})" {} >"$bin/$(binname {}).build" 2>&1' ||
  echo "bench: some packages do not build; the run below says which" >&2
$GO build -o "$bin/benchtable" ./scripts/benchtable || exit 1
build=$((SECONDS - began))
echo "bench: built in ${build}s" >&2

# One package at a time, so throughput and peak-memory numbers are not
# measured against each other; each binary runs in its package's
# directory, as go test runs it, and each package ends with go test's
# "ok"/"FAIL" line and its time, which benchtable reads.
status=0
for p in "${pkgs[@]}"; do
  exe=$bin/$(binname "$p")
  imp=$($GO list "$p" 2>/dev/null || echo "$p")
  t0=$SECONDS
  if [[ ! -x $exe ]]; then
    cat "$exe.build"
    printf 'FAIL\t%s [build failed]\n' "$imp"
    continue
  fi
  abs=$(cd "$(dirname "$exe")" && pwd)/$(basename "$exe")
  if (cd "$p" && "$abs" -test.paniconexit0 -test.run '^$' -test.bench "${BENCH:-.}" -test.benchtime 1x -test.timeout "${BENCH_TIMEOUT:-30m}"); then
    printf 'ok  \t%s\t%ds\n' "$imp" $((SECONDS - t0))
  else
    printf 'FAIL\t%s\t%ds\n' "$imp" $((SECONDS - t0))
  fi
done 2>&1 | tee "$log"
grep -q '^FAIL' "$log" && status=1

echo
echo "== Mill benchmarks (MILL_BENCH_BIG_BYTES=$MILL_BENCH_BIG_BYTES; raw output in $log)"
if [[ -n ${BENCH:-} ]]; then
  doc=${BENCH_DOC:-.local/PERFORMANCE.md}
else
  doc=${BENCH_DOC:-docs/PERFORMANCE.md}
fi
took=$((SECONDS - began))
"$bin/benchtable" -markdown "$doc" -log "$log" -duration "${took}s" -build "${build}s" "$log" || status=1
echo "bench: the table, the date, the machine and each package's time are in $doc" >&2
printf 'bench: total %dm%02ds (building %dm%02ds)\n' $((took / 60)) $((took % 60)) $((build / 60)) $((build % 60)) >&2
exit "$status"
