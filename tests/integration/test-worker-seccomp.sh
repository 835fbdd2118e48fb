#!/bin/bash
# worker_seccomp: by default (on: the allow-list) and with denylist a worker sets its syscall
# filter before its tenant's first call (seccomp mode 2 in /proc/PID/status) and sessions
# work; off, it sets none. The filters' calls one by one: tests/unit/test_seccomp.c.
. "$(dirname "$0")/lib.sh"

for mode in default off denylist on; do
	if [ "$mode" = default ]; then gp_config; else gp_config "worker_seccomp $mode"; fi
	gp_start
	hold H 4096
	case "$HELD" in READY*) ;; *) fail "hold_session with worker_seccomp $mode: $HELD" ;; esac
	wpid=$(status_json | jq -r '.sessions[0].worker_pid')
	sc=$(sed -n 's/^Seccomp:[[:space:]]*//p' "/proc/$wpid/status")
	want=2
	[ "$mode" = off ] && want=0
	[ "$sc" = "$want" ] || fail "worker_seccomp $mode: the worker's seccomp mode is $sc"
	# Every thread, softgpu's (started by cuInit, before the filter) too.
	for st in /proc/"$wpid"/task/*/status; do
		tsc=$(sed -n 's/^Seccomp:[[:space:]]*//p' "$st")
		[ "$tsc" = "$want" ] || fail "worker_seccomp $mode: thread $st is in mode $tsc"
		[ "$mode" = off ] || grep -q '^NoNewPrivs:[[:space:]]*1' "$st" ||
			fail "worker_seccomp $mode: thread $st has no no_new_privs"
	done
	[ "$(ls /proc/"$wpid"/task | wc -l)" -gt 1 ] || fail "the worker should have threads"
	release H || fail "hold_session failed with worker_seccomp $mode"
	run_client "$GP_TESTBIN/misc_calls" "$GP_TESTBIN/spin_kernel.ptx" >"$T/misc.out" 2>&1 ||
		{ cat "$T/misc.out"; fail "misc_calls failed with worker_seccomp $mode"; }
	gp_stop
	# A call the filter refused would show as a driver error in the worker's log.
	if grep -i "operation not permitted" "$T/daemon.log"; then
		fail "worker_seccomp $mode: a call was refused"
	fi
done
echo PASS
