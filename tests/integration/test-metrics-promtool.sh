#!/bin/bash
# /metrics passes `promtool check metrics` (Prometheus' own parser and linter), with every
# metric family holding samples: sessions of three tenants, active and queued, one with a
# compute share, one connection still in its handshake, one session ended (accounted).
# promtool comes from scripts/get-promtool.sh (run by install-deps.sh); without it this
# test exits 77, which ctest reports as skipped.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 GPUPOOL_MEMORY=16M

PROMTOOL=${PROMTOOL:-}
if [ -z "$PROMTOOL" ]; then
	PROMTOOL=$(command -v promtool || true)
fi
if [ -z "$PROMTOOL" ]; then
	PROMTOOL=${GP_PROMTOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpupool}/promtool
fi
if ! "$PROMTOOL" --version >/dev/null 2>&1; then
	echo "SKIP: no promtool (looked for \$PROMTOOL, promtool on PATH and $PROMTOOL);" \
		"scripts/get-promtool.sh fetches it"
	exit 77
fi

A=aaaaaaaaaaaaaaaaaaaa B=bbbbbbbbbbbbbbbbbbbb C=cccccccccccccccccccc
gp_config "token $A alice" "token $B bob" "token $C carol" "tenant bob compute=50%" \
	"queue_timeout 60" "handshake_timeout 120" "metrics_listen 127.0.0.1:0" \
	"accounting_file $T/acct.jsonl"
gp_start
url=$(grep -o "http://[0-9.:]*/metrics" "$T/daemon.log" | head -n 1)
[ -n "$url" ] || fail "the daemon should log where its metrics are"

# check NAME: the scrape passes promtool with nothing said at all (lint included), but for
# the lint's word on dcgm-exporter's families (DCGM_FI_*): their names and labels (UUID,
# modelName, Hostname) are dcgm-exporter's, kept so that its dashboards work, and not
# snake_case. Without those families the scrape must be silent; with them it must parse.
check() {
	local rc=0
	curl -sf "$url" >"$T/$1.prom" || fail "GET $url"
	grep -q '^DCGM_FI_DEV_GPU_UTIL{' "$T/$1.prom" || fail "$1: no DCGM_FI_DEV_GPU_UTIL"
	"$PROMTOOL" check metrics <"$T/$1.prom" >"$T/$1.promtool" 2>&1 || rc=$?
	if grep -v '^DCGM_FI_[A-Z_]* ' "$T/$1.promtool" | grep -q .; then
		cat "$T/$1.prom" >&2
		fail "promtool check metrics ($1, exit $rc): $(cat "$T/$1.promtool")"
	fi
	rc=0
	grep -v '^\(# [A-Z]* \)\?DCGM_FI_' "$T/$1.prom" >"$T/$1.ours.prom"
	"$PROMTOOL" check metrics <"$T/$1.ours.prom" >"$T/$1.promtool" 2>&1 || rc=$?
	if [ "$rc" != 0 ] || [ -s "$T/$1.promtool" ]; then
		cat "$T/$1.prom" >&2
		fail "promtool check metrics ($1, exit $rc): $(cat "$T/$1.promtool")"
	fi
}

# An idle pool: families with no sessions yet.
check idle

# One session that ends before the scrape (its accounting record is written).
GPUPOOL_TOKEN=$C run_client "$GP_STAGE/bin/vector_add" 1000 >"$T/va.out" 2>&1 ||
	fail "vector_add: $(cat "$T/va.out")"
GPUPOOL_TOKEN=$A GPUPOOL_COMPUTE=80% hold A1 1048576
case "$HELD" in READY*) ;; *) fail "alice with 80%: $HELD" ;; esac
GPUPOOL_TOKEN=$B hold B1 2097152 2
case "$HELD" in READY*) ;; *) fail "bob: $HELD" ;; esac
# alice asks for 30% with 20% left: queued; carol waits behind her.
GPUPOOL_TOKEN=$A GPUPOOL_COMPUTE=30% hold_start A2 4096
wait_for '.sessions | map(select(.state == "queued")) | length == 1' 10
GPUPOOL_TOKEN=$C hold_start C1 4096
wait_for '.sessions | map(select(.state == "queued")) | length == 2' 10
# A client that finishes TLS and then says nothing stays in its handshake (until
# handshake_timeout): openssl s_client, its stdin a fifo nobody writes.
mkfifo "$T/raw.in"
openssl s_client -quiet -connect "$GPUPOOL_SERVER" -CAfile "$GPUPOOL_CA" <"$T/raw.in" \
	>/dev/null 2>&1 &
RAW_PID=$!
exec {raw}>"$T/raw.in"
wait_for '.sessions | map(select(.state == "handshake")) | length == 1' 10
"$POOLCTL" -s "$T/admin.sock" drain 0 >/dev/null || fail "poolctl drain 0"

check busy
# Every family has samples now.
for name in $(sed -n 's/^# TYPE \([^ ]*\) .*/\1/p' "$T/busy.prom"); do
	grep -Eq "^$name(\{| )" "$T/busy.prom" || fail "no sample of $name"
done
for s in handshake queued active; do
	grep -q "^gpupool_sessions{state=\"$s\"} [1-9]" "$T/busy.prom" ||
		fail "a $s session: $(grep '^gpupool_sessions' "$T/busy.prom")"
done
grep -q '^gpupool_session_compute_percent{session="[0-9]*",tenant="alice",program="hold_session"} 80$' \
	"$T/busy.prom" || fail "alice's share: $(grep compute_percent "$T/busy.prom")"
grep -q '^gpupool_gpu_draining{gpu="0",name="softgpu"} 1$' "$T/busy.prom" ||
	fail "GPU 0 draining: $(grep gpu_draining "$T/busy.prom")"
grep -q 'carol' "$T/acct.jsonl" || fail "carol's vector_add should be accounted"

exec {raw}>&-
kill "$RAW_PID" 2>/dev/null || true
wait "$RAW_PID" || true
"$POOLCTL" -s "$T/admin.sock" undrain 0 >/dev/null || fail "poolctl undrain 0"
release A1 || fail "alice's first session"
release B1 || fail "bob's session"
release A2 || fail "alice's queued session"
release C1 || fail "carol's queued session"
wait_for '.sessions | length == 0' 10
check after
gp_stop
echo PASS
