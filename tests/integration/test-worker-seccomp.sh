#!/bin/bash
# worker_seccomp on: a worker sets its syscall filter before its tenant's first call (seccomp
# mode 2 in /proc/PID/status) and the session works; off (the default) it sets none.
. "$(dirname "$0")/lib.sh"

for mode in off on; do
	gp_config "worker_seccomp $mode"
	gp_start
	hold H 4096
	case "$HELD" in READY*) ;; *) fail "hold_session with worker_seccomp $mode: $HELD" ;; esac
	wpid=$(status_json | jq -r '.sessions[0].worker_pid')
	sc=$(sed -n 's/^Seccomp:[[:space:]]*//p' "/proc/$wpid/status")
	want=0
	[ "$mode" = on ] && want=2
	[ "$sc" = "$want" ] || fail "worker_seccomp $mode: the worker's seccomp mode is $sc"
	release H || fail "hold_session failed with worker_seccomp $mode"
	run_client "$GP_TESTBIN/misc_calls" "$GP_TESTBIN/spin_kernel.ptx" >"$T/misc.out" 2>&1 ||
		{ cat "$T/misc.out"; fail "misc_calls failed with worker_seccomp $mode"; }
	gp_stop
done
echo PASS
