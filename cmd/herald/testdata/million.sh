#!/usr/bin/env bash
# million.sh: one million signed inbound events through a running herald,
# in chunks, recording herald's memory and data dir size as it goes
# (README, Performance and footprint). Not part of `make test`: it takes
# minutes and wants a quiet machine.
#
# Each chunk is N/CHUNKS events from a load generator that POSTs signed
# events to herald's hook and waits until a sink has seen every one of
# them. After each chunk the script prints herald's resident memory (RSS),
# its peak so far, the size of the data dir and the chunk's events/s.
# herald runs with a short ledger retention, so pruning takes part. At the
# end it waits one retention (and a pruning pass) and measures once more.
#
# Needs, in BENCH_BIN, two programs with these command lines:
#   sink -addr HOST:PORT -id-regex RE -verify-secret SECRET
#       counts the distinct event ids it receives (GET /stats, POST /reset)
#   load -target URL -sink URL -n N -c C -sign standard -secret SECRET
#       -timeout 120s -settle 1s
#       sends N signed events and prints one JSON line (events_per_s,
#       duplicates, missing) once the sink has seen them all
#
# Environment (defaults in brackets): BENCH_BIN (required), HERALD
# [bin/herald], N [1000000], CHUNKS [10], C [32], RETENTION [1m],
# RATE [none: as fast as herald takes them] in events per second, sent
# on a fixed schedule (load -rate), PORT [28380], SINK_PORT [29399], DATA_DIR [a temporary dir, removed at the end],
# MAX_SECONDS [3600]: the whole run is stopped after this long.
#
# At full speed the first chunk ends before anything is old enough to
# prune, so the rows after it also show the ledger filling up to one
# retention's worth of pushes. At a RATE where the first chunk lasts
# longer than RETENTION, pruning is under way by the first row, and any
# growth in the rows after it is growth beyond a full retention window.
set -euo pipefail

: "${BENCH_BIN:?set BENCH_BIN to the directory holding the load and sink programs}"
HERALD="${HERALD:-bin/herald}"
N="${N:-1000000}"; CHUNKS="${CHUNKS:-10}"; C="${C:-32}"; RETENTION="${RETENTION:-1m}"
rate_flags=(); [ -z "${RATE:-}" ] || rate_flags=(-rate "$RATE")
PORT="${PORT:-28380}"; SINK_PORT="${SINK_PORT:-29399}"; MAX_SECONDS="${MAX_SECONDS:-3600}"
WORK="$(mktemp -d)"
DATA_DIR="${DATA_DIR:-$WORK/data}"
SECRET="whsec_$(head -c 32 /dev/urandom | base64)"
export SECRET

cat >"$WORK/herald.yaml" <<EOF
server: {listen: "127.0.0.1:$PORT"}
store: {driver: bolt, retention: $RETENTION}
channels: {telegram: {enabled: false}, feishu: {enabled: false}}
policy:
  admins: ["console:admin"]
  allow_private_networks: true
recipients:
  sink:
    webhook: {url: "http://127.0.0.1:$SINK_PORT/in", secret: "\${SECRET}"}
inbound:
  load:
    format: standard
    secret: "\${SECRET}"
    route: [sink]
EOF

HP=""; SP=""
cleanup() {
  for p in $HP $SP; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

"$HERALD" serve --config "$WORK/herald.yaml" --data-dir "$DATA_DIR" >"$WORK/herald.log" 2>&1 & HP=$!
"$BENCH_BIN/sink" -addr "127.0.0.1:$SINK_PORT" -id-regex 'ev[0-9a-f]+x[0-9]+y' -verify-secret "$SECRET" \
  2>"$WORK/sink.log" & SP=$!
for _ in $(seq 100); do
  curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && curl -s -o /dev/null "http://127.0.0.1:$SINK_PORT/stats" && break
  sleep 0.1
done

kib() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$HP/status"; }
row() { # label events/s dups missing
  printf '| %s | %s | %d | %d | %s | %s | %s |\n' "$1" "$2" "$(( $(kib VmRSS) / 1024 ))" "$(( $(kib VmHWM) / 1024 ))" \
    "$(du -sm "$DATA_DIR" | cut -f1)" "$3" "$4"
}

echo "N=$N in $CHUNKS chunks, C=$C, rate ${RATE:-closed loop}, retention $RETENTION, data dir $DATA_DIR"
echo
echo "| after | events/s | RSS MiB | peak RSS MiB | data dir MiB | duplicates | missing |"
echo "|---|---|---|---|---|---|---|"
per=$(( N / CHUNKS )); start=$SECONDS
for ((i = 1; i <= CHUNKS; i++)); do
  left=$(( MAX_SECONDS - (SECONDS - start) ))
  [ "$left" -gt 0 ] || { echo "stopped: MAX_SECONDS=$MAX_SECONDS reached" >&2; exit 1; }
  out=$(timeout "$left" "$BENCH_BIN/load" -target "http://127.0.0.1:$PORT/hooks/load" \
    -sink "http://127.0.0.1:$SINK_PORT" -n "$per" -c "$C" -sign standard -secret "$SECRET" \
    "${rate_flags[@]}" -timeout 120s -settle 1s 2>>"$WORK/load.log")
  field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" <<<"$out"; }
  row "$(( i * per )) events" "$(field events_per_s)" "$(field duplicates)" "$(field missing)"
done
# One retention, then a pruning pass (every retention/8, 1 s to 1 min), then the last row.
case "$RETENTION" in
  *h) r=$(( ${RETENTION%h} * 3600 )) ;;
  *m) r=$(( ${RETENTION%m} * 60 )) ;;
  *s) r=${RETENTION%s} ;;
  *) echo "RETENTION=$RETENTION: give it in s, m or h" >&2; exit 1 ;;
esac
idle=$(( r + (r / 8 > 60 ? 60 : (r / 8 < 1 ? 1 : r / 8)) + 5 ))
sleep "$idle"
row "${idle} s idle (retention and a pruning pass)" "-" 0 0
