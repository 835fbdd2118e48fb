#!/bin/bash
# Many sessions held at once: GP_LOAD_SESSIONS hold_sessions (default 128, the short mode CI
# runs; 256 for the long one) of four tenants over TLS (tokens), plain TCP (a token) and the
# Unix socket (the user), plus a few driver-API and cudart programs run while they are held.
# Every client's result is checked, status shows every session, poolctl answers each call
# within its own timeout, and once they have ended nothing is held and the supervisor has no
# more descriptors than before. The supervisor's RSS and descriptors, the workers' and the
# clients' RSS and poolctl's latency under load are printed as figures (never asserted).
#
# Sizing: one session costs a worker (~6.5 MiB RSS on softgpu) and a client (~6 MiB):
# 128 are ~1.6 GiB and ~10 s here, 256 ~3.1 GiB and ~20 s. See docs/performance.md, "Many
# sessions".
. "$(dirname "$0")/lib.sh"
# Sanitizer builds' processes are several times larger (and slower): fewer by default.
if [ -n "${GP_SAN_RUNTIME:-}" ]; then N=${GP_LOAD_SESSIONS:-32}; else N=${GP_LOAD_SESSIONS:-128}; fi
BATCH=${GP_LOAD_BATCH:-16}
export SOFTGPU_DEVICES=2 SOFTGPU_MEMORY=8G GPUPOOL_MEMORY=16M
A=aaaaaaaaaaaaaaaaaaaa B=bbbbbbbbbbbbbbbbbbbb C=cccccccccccccccccccc
me=$(id -un)
[ "$(ulimit -n)" -ge $((N * 2 + 64)) ] || ulimit -n $((N * 2 + 64))

gp_config "listen_unix $T/pool.sock" "listen_plain 127.0.0.1:0" \
	"token $A alice" "token $B bob" "token $C carol" \
	"max_sessions $((N + 16))" "max_queued_per_tenant $((N + 16))" "log_level info"
gp_start
tls=$GPUPOOL_SERVER
plain=$(jq -r .listen_plain "$T/status.json")
rt_basic=${GP_BUILD:?}/tests/runtime/rt_basic.static

# rss_kib PID / nfds PID: from /proc.
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
nfds() { ls "/proc/$1/fd" | wc -l; }
# settled: status shows no session and every warm worker ready again.
settled() {
	wait_for '.sessions | length == 0' 60
	wait_for "(.warm_workers // 0) == $WARM" 30
}
WARM=2 # warm_workers 1 (the default) on each of the 2 GPUs
settled
rss0=$(rss_kib "$DAEMON_PID") fd0=$(nfds "$DAEMON_PID")
echo "supervisor at start: RSS ${rss0} KiB, $fd0 fds, $WARM warm workers ready"
# poolctl_lat MIN_SESSIONS: ten `poolctl status --json`, each within its own timeout and
# showing at least MIN_SESSIONS; their latencies, µs, sorted, in $LAT.
poolctl_lat() {
	local k s lat=()
	for k in $(seq 1 10); do
		s=$(date +%s%N)
		timeout 10 "$POOLCTL" -s "$T/admin.sock" status --json >"$T/lat.json" ||
			fail "poolctl status --json did not answer within 10 s (call $k)"
		lat+=($(( ($(date +%s%N) - s) / 1000 )))
		jq -e ".sessions | length >= $1" "$T/lat.json" >/dev/null || fail "status under load"
	done
	LAT=$(printf '%s\n' "${lat[@]}" | sort -n)
}
poolctl_lat 0
idle_lat=$LAT

# Client i's transport and tenant: i mod 4.
tenant_of() {
	case $(($1 % 4)) in 0) echo alice ;; 1) echo bob ;; 2) echo carol ;; 3) echo "$me" ;; esac
}
start_one() {
	local i=$1
	case $((i % 4)) in
	0) GPUPOOL_SERVER=$tls GPUPOOL_TOKEN=$A hold_start "H$i" $((4096 + i)) 2 ;;
	1) GPUPOOL_SERVER=$tls GPUPOOL_TOKEN=$B hold_start "H$i" $((4096 + i)) 2 ;;
	2) GPUPOOL_SERVER=plain:$plain GPUPOOL_TOKEN=$C hold_start "H$i" $((4096 + i)) 2 ;;
	3) GPUPOOL_SERVER=unix:$T/pool.sock hold_start "H$i" $((4096 + i)) 2 ;;
	esac
}

t0=$(date +%s%N)
i=1
while [ $i -le "$N" ]; do
	last=$((i + BATCH - 1))
	[ $last -le "$N" ] || last=$N
	for j in $(seq "$i" "$last"); do start_one "$j"; done
	for j in $(seq "$i" "$last"); do
		hold_line "H$j" 120
		case "$HELD" in "READY $((2 * (4096 + j))) "*) ;; *) fail "session $j: $HELD" ;; esac
	done
	i=$((last + 1))
done
echo "$N sessions held after $(( ($(date +%s%N) - t0) / 1000000 )) ms (batches of $BATCH)"

# Status shows every one, active, with its tenant.
assert_status ".sessions | length == $N and all(.state == \"active\")" \
	"status should show $N active sessions"
for t in alice bob carol "$me"; do
	want=0
	for j in $(seq 1 "$N"); do [ "$(tenant_of "$j")" != "$t" ] || want=$((want + 1)); done
	jq -e --arg t "$t" --argjson n "$want" '[.sessions[] | select(.tenant == $t)] | length == $n' \
		"$T/status.json" >/dev/null || fail "tenant $t should hold $want sessions"
done

# A few programs more while they are held, on every transport: each must pass.
pids=()
for k in 1 2 3 4; do
	case $k in
	1) srv=$tls tok=$A ;; 2) srv=plain:$plain tok=$C ;; *) srv=unix:$T/pool.sock tok= ;;
	esac
	( rc=0; GPUPOOL_SERVER=$srv GPUPOOL_TOKEN=$tok run_client "$GP_STAGE/bin/vector_add" \
		$((20000 + k)) >"$T/va$k.out" 2>&1 || rc=$?; echo $rc >"$T/va$k.rc" ) &
	pids+=($!)
done
for k in 1 2; do
	( rc=0; GPUPOOL_TOKEN=$B run_client "$rt_basic" >"$T/rt$k.out" 2>&1 || rc=$?
	  echo $rc >"$T/rt$k.rc" ) &
	pids+=($!)
done

# poolctl while they are held (and the programs run): every call answers in time.
poolctl_lat "$N"
s=$(date +%s%N)
timeout 10 "$POOLCTL" -s "$T/admin.sock" status >/dev/null || fail "poolctl status under load"
text_us=$(( ($(date +%s%N) - s) / 1000 ))
wait "${pids[@]}"
for k in 1 2 3 4; do
	[ "$(cat "$T/va$k.rc")" = 0 ] || fail "vector_add $k under load: $(cat "$T/va$k.out")"
	grep -q "^vector_add: $((20000 + k)) elements on .*: PASSED" "$T/va$k.out" ||
		fail "vector_add $k: $(cat "$T/va$k.out")"
done
for k in 1 2; do
	[ "$(cat "$T/rt$k.rc")" = 0 ] && grep -q "rt_basic: PASSED" "$T/rt$k.out" ||
		fail "rt_basic $k under load: $(cat "$T/rt$k.out")"
done

# Figures at N.
status_json >"$T/sN.json"
rssN=$(rss_kib "$DAEMON_PID") fdN=$(nfds "$DAEMON_PID")
wrss=0 crss=0 nw=0
for w in $(jq -r '.sessions[].worker_pid' "$T/sN.json"); do
	r=$(rss_kib "$w" 2>/dev/null) || continue
	wrss=$((wrss + r)) nw=$((nw + 1))
done
for j in $(seq 1 "$N"); do
	eval "p=\$H${j}_PID"
	r=$(rss_kib "$p" 2>/dev/null) || continue
	crss=$((crss + r))
done
echo "at $N sessions: supervisor RSS ${rssN} KiB ($(( (rssN - rss0) / N )) KiB/session)," \
	"$fdN fds ($(( (fdN - fd0) )) more: $(awk -v a="$fdN" -v b="$fd0" -v n="$N" \
	'BEGIN { printf "%.2f", (a - b) / n }') per session)"
echo "worker RSS: $((wrss / nw)) KiB mean over $nw; client RSS: $((crss / N)) KiB mean;" \
	"$(( (wrss + crss) / 1024 )) MiB in all"
lat3() { echo "min $(echo "$1" | head -1), median $(echo "$1" | sed -n 5p), max $(echo "$1" | tail -1) µs"; }
echo "poolctl status --json: idle $(lat3 "$idle_lat"); at $N sessions $(lat3 "$LAT");" \
	"poolctl status (text) at $N $text_us µs"

# Release them all: each finishes cleanly.
for j in $(seq 1 "$N"); do
	release "H$j" || fail "session $j did not finish cleanly: $(cat "$T/H$j.out" "$T/H$j.err")"
	grep -q "^DONE" "$T/H$j.out" || fail "session $j: $(cat "$T/H$j.out")"
done
settled
assert_status 'all(.gpus[]; .memory_reserved == 0 and .memory_used == 0 and .sessions == 0)' \
	"no GPU should hold anything after the sessions ended"
# The descriptor check: back to the start count (closes may lag the status by a moment).
for _ in $(seq 1 100); do
	fd1=$(nfds "$DAEMON_PID")
	[ "$fd1" -gt "$fd0" ] || break
	sleep 0.1
done
rss1=$(rss_kib "$DAEMON_PID")
echo "supervisor after: RSS ${rss1} KiB, $fd1 fds"
[ "$fd1" -le "$fd0" ] || { ls -l "/proc/$DAEMON_PID/fd" >&2; fail "the supervisor holds $fd1 fds, $fd0 at the start"; }
gp_stop
echo PASS
