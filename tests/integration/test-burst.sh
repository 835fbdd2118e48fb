#!/bin/bash
# Bursts wait, they are not refused: 48 clients (GP_BURST_CLIENTS) at once against
# max_handshakes 4 all run, in turn, and correctly. With max_pending_per_address 8 the excess
# connections are closed, and their clients try again until they get in.
#
# GP_BURST_CLIENTS (48, the short mode CI runs) sets the first burst's size; 256 is the long
# mode (docs/operations.md, section 9): any past max_sessions 128 wait for a slot and are
# served as sessions end. Each client is a vector_add and its worker, ~12 MiB together
# on softgpu: size it to the host's memory.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=2
N=${GP_BURST_CLIENTS:-48}
[ "$(ulimit -n)" -ge $((N * 2 + 64)) ] || ulimit -n $((N * 2 + 64))

# burst N: N vector_adds at once, each its own size; every one must pass.
burst() {
	local n=$1 i pids=()
	for i in $(seq 1 "$n"); do
		( rc=0; run_client "$GP_STAGE/bin/vector_add" $((1000 + i)) >"$T/c$i.out" 2>&1 || rc=$?
		  echo "$rc" >"$T/c$i.rc" ) &
		pids+=($!)
	done
	wait "${pids[@]}"
	for i in $(seq 1 "$n"); do
		[ "$(cat "$T/c$i.rc")" = 0 ] || fail "client $i of $n failed: $(cat "$T/c$i.out")"
		grep -q "^vector_add: $((1000 + i)) elements on .*: PASSED" "$T/c$i.out" ||
			fail "client $i of $n: $(cat "$T/c$i.out")"
	done
}

gp_config "default_memory 64M" "max_sessions 128" "max_handshakes 4"
gp_start
start=$(date +%s%N)
burst "$N"
echo "$N clients, max_handshakes 4: all passed in $(( ($(date +%s%N) - start) / 1000000 )) ms"
# How long connections waited for a worker (a figure, never judged): the daemon logs each.
sed -n 's/.*: its worker starts after \([0-9]*\) ms$/\1/p' "$T/daemon.log" | sort -n >"$T/waits"
awk '{ v[NR] = $1; if ($1 > 0) w++ } END { if (NR) printf "%d connections, %d waited for a worker: median %d ms, p99 %d ms, max %d ms\n", NR, w, v[int((NR + 1) / 2)], v[int((99 * NR + 99) / 100)], v[NR] }' "$T/waits"
if grep -q "refused" "$T/daemon.log"; then fail "no connection should be refused"; fi
wait_for '.sessions | length == 0' 30
gp_stop

gp_config "default_memory 64M" "max_sessions 128" "max_handshakes 4" "max_pending_per_address 8"
gp_start
start=$(date +%s%N)
burst 24
echo "24 clients, max_pending_per_address 8: all passed in $(( ($(date +%s%N) - start) / 1000000 )) ms"
grep -q "max_pending_per_address 8" "$T/daemon.log" ||
	fail "the burst should have gone past max_pending_per_address"
gp_stop
echo PASS
