#!/bin/bash
# A session's device address window (include/gpupool/va_window.h, Hello.va_window): with
# GPUPOOL_VA_WINDOW=3 on a 2-GPU softgpu pool, device 0's addresses lie in [56, 57) TiB and
# device 1's in [57, 58) TiB -- softgpu placing its memory (SOFTGPU_VA_WINDOW), then the
# worker mapping it there itself as on NVIDIA's driver (GPUPOOL_WORKER_VA_VMM=1); kernels and
# copies stay right. A window past 11 is refused with its reason, and the pool serves the
# next session.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=2 SOFTGPU_MEMORY=256M GPUPOOL_GPUS=2

gp_config
gp_start
out=$(GPUPOOL_VA_WINDOW=3 run_client "$GP_TESTBIN/va_window" 3 place 2>&1) ||
	fail "window 3: $out"
echo "$out"
grep -q "device address window 3 (0x380000000000): the driver places its memory there" \
	"$T/daemon.log" || fail "the worker did not say window 3 was placed by the driver"

# Refused with a reason; the daemon goes on.
for k in 12 99999 4294967299; do
	if out=$(GPUPOOL_LOG=error GPUPOOL_VA_WINDOW=$k run_client "$GP_TESTBIN/va_window" "$k" place 2>&1); then
		fail "window $k was not refused: $out"
	fi
	# past 32 bits the client sends the largest window, never a wrapped one (4294967299 is 3)
	want=$k
	[ "$k" = 4294967299 ] && want=4294967295
	echo "$out" | grep -q "device address window $want asked for: a window is 1 to 11" ||
		fail "window $k: no reason given: $out"
	echo "window $k refused"
done
wait_for '.sessions | length == 0' 10
# Without a window a session is as before (softgpu's own placement: window 0).
out=$(run_client "$GP_TESTBIN/va_window" 0 default 2>&1) || fail "no window: $out"
echo "$out"
gp_stop

# As on NVIDIA's driver: the worker reserves and maps each allocation in the window.
export GPUPOOL_WORKER_VA_VMM=1
: >"$T/daemon.log"
gp_start
out=$(GPUPOOL_VA_WINDOW=3 run_client "$GP_TESTBIN/va_window" 3 vmm 2>&1) ||
	fail "window 3, vmm: $out"
echo "$out"
grep -q "device address window 3 (0x380000000000): allocations mapped there" \
	"$T/daemon.log" || fail "the worker did not say window 3 was mapped by itself"
out=$(GPUPOOL_VA_WINDOW=11 run_client "$GP_TESTBIN/va_window" 11 vmm 2>&1) ||
	fail "window 11, vmm: $out"
echo "$out"
gp_stop
echo PASS
