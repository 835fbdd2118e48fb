#!/bin/bash
# Every context's default device heap and printf buffer count against the session's memory
# limit, primary contexts too: a 64 MiB session gets as many contexts as fit (fewer than the
# 16 the worker would allow), then CUDA_ERROR_OUT_OF_MEMORY, and the memory the pool shows
# for it is what they hold and never above its limit.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G

gp_start
rm -f "$T/raw.in"
mkfifo "$T/raw.in"
RAW_MEMORY=$((64 << 20)) "$GP_TESTBIN/raw_client" contexts <"$T/raw.in" >"$T/raw.out" 2>&1 &
RAW_PID=$!
exec {RAW_IN}>"$T/raw.in"
for _ in $(seq 1 200); do grep -q held "$T/raw.out" && break; sleep 0.05; done
cat "$T/raw.out"
grep -q held "$T/raw.out" || fail "raw_client: $(cat "$T/raw.out")"
n=$(sed -n 's/^\([0-9]*\) contexts.*/\1/p' "$T/raw.out")
# softgpu's defaults: an 8 MiB heap and a 1 MiB printf buffer, 9 MiB a context.
[ "$n" -eq 6 ] || fail "expected 6 contexts besides the primary one in 64 MiB, got $n"
assert_status ".sessions[0].memory_used == $((7 * 9 << 20))" \
	"the session should hold 7 contexts' heaps and buffers"
assert_status '.sessions[0].memory_used <= .sessions[0].memory_limit' \
	"the session's memory is above its limit"
exec {RAW_IN}>&-
wait "$RAW_PID" || fail "the last context should be refused with CUDA_ERROR_OUT_OF_MEMORY"
wait_for '.sessions | length == 0' 10
gp_stop
echo PASS
