#!/bin/bash
# A call that waits reads its own answer when no other thread reads (interposer/client.c,
# "who reads"): a single-threaded program's round trips, launches and copies are all read
# by the calling thread, none handed over by the reader thread, which reads only for host
# functions and copies nobody waits for. The interposer says the counts at exit
# (GPUPOOL_LOG=debug); gpupool-bench's child checks that every kernel ran.
. "$(dirname "$0")/lib.sh"

gp_start
out=$(GPUPOOL_LOG=debug run_client "$GP_STAGE/bin/gpupool-bench" --child all "$GP_INTERPOSER" \
	300 300 1,2 5 2>&1) || fail "the calls failed: $out"
line=$(echo "$out" | grep 'frames read:') || fail "no frame counts at exit: $out"
calls=$(echo "$line" | sed -n 's/.*frames read: \([0-9]*\) by waiting calls.*/\1/p')
reader=$(echo "$line" | sed -n 's/.*, \([0-9]*\) by the reader thread.*/\1/p')
echo "$line"
[ "${calls:-0}" -ge 300 ] || fail "only ${calls:-0} frames read by the calls themselves: $line"
[ "${reader:-1}" -eq 0 ] || fail "the reader thread read $reader frames for a lone caller: $line"
wait_for '.sessions | length == 0' 10
gp_stop
echo PASS
