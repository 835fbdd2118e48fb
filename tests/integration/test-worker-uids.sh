#!/bin/bash
# worker_uids: each session's worker switches, before its tenant's first call, to a uid (and
# gid of that number) of its own from the range, with worker_groups as its only other groups
# and no capabilities; two sessions at once have two uids; the pool's key file is then out of
# its reach (tried as that uid with setpriv); a uid is given again only once its worker is
# gone; with every uid held a connection is closed (the client sees a busy pool); a daemon
# that cannot switch users refuses such a configuration at start. Needs root.
. "$(dirname "$0")/lib.sh"
export GPUPOOL_MEMORY=64M

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: needs root to give workers other uids"
	exit 0
fi
# Two uids only (lib.sh's range is replaced): both held at once, the third client waits.
first=$(( 3000000 + ($$ % 30000) * 256 + 7 ))
last=$((first + 1))
gp_config "worker_uids $first-$last" "worker_groups 44,nogroup" "warm_workers 1"
gp_start

# The ids a worker runs as, from /proc/PID/status: "Uid: r e s fs".
ids() {
	sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" | tr -s '\t ' ' ' | sed 's/ $//'
}
worker_of() { # the worker pid of the session whose client is pid $1
	status_json | jq -r --argjson p "$1" '.sessions[] | select(.client_pid == $p) | .worker_pid'
}

hold A 4096
case "$HELD" in READY*) ;; *) fail "hold_session A: $HELD" ;; esac
hold B 4096
case "$HELD" in READY*) ;; *) fail "hold_session B: $HELD" ;; esac
wa=$(worker_of "$A_PID")
wb=$(worker_of "$B_PID")
[ -n "$wa" ] && [ -n "$wb" ] && [ -d "/proc/$wa" ] && [ -d "/proc/$wb" ] ||
	fail "no worker pids: '$wa' '$wb'"
nogroup=$(getent group nogroup | cut -d: -f3)
for w in "$wa" "$wb"; do
	read -r ru eu su fu <<<"$(ids "$w" Uid)"
	[ "$ru" = "$eu" ] && [ "$eu" = "$su" ] && [ "$su" = "$fu" ] ||
		fail "worker $w: its uids differ: $(ids "$w" Uid)"
	[ "$ru" -ge "$first" ] && [ "$ru" -le "$last" ] ||
		fail "worker $w runs as uid $ru, outside worker_uids $first-$last"
	[ "$(ids "$w" Gid)" = "$ru $ru $ru $ru" ] || fail "worker $w: gids $(ids "$w" Gid), not $ru"
	groups=$(ids "$w" Groups | tr ' ' '\n' | sort -n | tr '\n' ' ' | sed 's/ $//')
	[ "$groups" = "$(printf '%s\n' 44 "$nogroup" | sort -n | tr '\n' ' ' | sed 's/ $//')" ] ||
		fail "worker $w: groups '$groups', want 44 and nogroup ($nogroup)"
	for c in CapEff CapPrm CapInh CapAmb; do
		[ "$(ids "$w" $c)" = 0000000000000000 ] || fail "worker $w: $c $(ids "$w" $c)"
	done
	grep -q '^NoNewPrivs:[[:space:]]*1' "/proc/$w/status" || fail "worker $w: no no_new_privs"
	grep -q '^Seccomp:[[:space:]]*2' "/proc/$w/status" || fail "worker $w: no seccomp filter"
	grep -q "session [0-9]*: running as uid $ru gid $ru" "$T/daemon.log" ||
		fail "the worker's switch to $ru is not in the log"
done
ua=$(ids "$wa" Uid | cut -d' ' -f1)
ub=$(ids "$wb" Uid | cut -d' ' -f1)
[ "$ua" != "$ub" ] || fail "two live workers share uid $ua"

# Its own cgroup's files are the daemon's: as its uid a worker can neither raise its limit nor
# move itself out (v1 memory, or v2; skipped where the pool made no cgroup).
cgv1=$(sed -n 's/^[0-9]*:memory:\(.*\)$/\1/p' "/proc/$wa/cgroup")
cgv2=$(sed -n 's/^0::\(.*\)$/\1/p' "/proc/$wa/cgroup")
limit=
if [ -n "$cgv1" ] && [ -f "/sys/fs/cgroup/memory$cgv1/memory.limit_in_bytes" ]; then
	limit=/sys/fs/cgroup/memory$cgv1/memory.limit_in_bytes
elif [ -n "$cgv2" ] && [ -f "/sys/fs/cgroup$cgv2/memory.max" ]; then
	limit=/sys/fs/cgroup$cgv2/memory.max
fi
case "$limit" in
*session*)
	[ -w "$limit" ] || fail "root cannot write $limit"
	for f in "$limit" "$(dirname "$(dirname "$limit")")/cgroup.procs"; do
		if setpriv --reuid="$ua" --regid="$ua" --clear-groups sh -c "echo $wa >'$f'" 2>/dev/null
		then
			fail "uid $ua could write $f"
		fi
	done
	;;
*) echo "note: worker $wa has no session cgroup here; its files are not checked" ;;
esac

# The key file: the daemon's user reads it, a worker's uid cannot (EACCES).
key=$T/certs/server.key
cat "$key" >/dev/null || fail "root cannot read $key"
for u in "$ua" "$ub"; do
	if out=$(setpriv --reuid="$u" --regid="$u" --clear-groups cat "$key" 2>&1); then
		fail "uid $u can read the pool's key"
	fi
	case "$out" in *"Permission denied"*) ;; *) fail "uid $u reading the key: $out" ;; esac
done
# With the directory open to everyone, the file's own mode keeps it: what an operator's
# 0600 (or 0400) key gives.
chmod 755 "$T" "$T/certs"
[ "$(stat -c %a "$key")" = 600 ] || chmod 600 "$key"
out=$(setpriv --reuid="$ua" --regid="$ua" --clear-groups cat "$key" 2>&1) &&
	fail "uid $ua can read the pool's 0600 key"
case "$out" in *"Permission denied"*) ;; *) fail "uid $ua reading the 0600 key: $out" ;; esac
chmod 700 "$T"

# Every uid held: a third connection is closed before Hello (a busy pool to the client).
out=$(GPUPOOL_CONNECT_TIMEOUT=0 run_client "$GP_TESTBIN/hold_session" 4096 </dev/null 2>&1) &&
	fail "a third session started with both uids held: $out"
grep -q "closed: every uid of worker_uids is a live worker's" "$T/daemon.log" ||
	fail "the refusal for want of a uid is not logged"

# A uid comes back once its worker is reaped: B's, and the session works under it.
release B || fail "hold_session B failed"
wait_for '.sessions | length == 1' 20
hold C 4096
case "$HELD" in READY*) ;; *) fail "hold_session C after B ended: $HELD" ;; esac
wc=$(worker_of "$C_PID")
[ "$(ids "$wc" Uid | cut -d' ' -f1)" = "$ub" ] || fail "C's worker is not on B's freed uid $ub"
release C || fail "hold_session C failed"
release A || fail "hold_session A failed"

# Calls that use the worker's files and memory: misc calls, VMM (softgpu's memfds),
# managed memory (two minutes under the sanitizers: integration.managed runs it there, with
# lib.sh's worker_uids as every test does as root).
run_client "$GP_TESTBIN/misc_calls" "$GP_TESTBIN/spin_kernel.ptx" >"$T/misc.out" 2>&1 ||
	{ cat "$T/misc.out"; fail "misc_calls failed as a worker uid"; }
run_client "$GP_TESTBIN/vmm" >"$T/vmm.out" 2>&1 ||
	{ cat "$T/vmm.out"; fail "vmm failed as a worker uid"; }
if [ -z "${GP_SAN_RUNTIME:-}" ]; then
	run_client "$GP_TESTBIN/managed" >"$T/managed.out" 2>&1 ||
		{ cat "$T/managed.out"; fail "managed failed as a worker uid"; }
fi
gp_stop

# A daemon that cannot switch users: refused at start, with the reason.
gp_config "worker_uids $first-$last"
set +e
out=$(setpriv --bounding-set=-setuid "$GP_STAGE/bin/gpupoold" -n -f "$T/gpupoold.conf" 2>&1)
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "gpupoold without CAP_SETUID accepted worker_uids: $out"
case "$out" in *"worker_uids: the daemon lacks CAP_SETUID"*) ;; *) fail "no reason given: $out" ;; esac
gp_config "worker_uids $first-$last" "worker_groups no-such-group-gp"
set +e
out=$("$GP_STAGE/bin/gpupoold" -n -f "$T/gpupoold.conf" 2>&1)
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "an unknown worker_groups group was accepted"
case "$out" in *"worker_groups: no group no-such-group-gp"*) ;; *) fail "no reason: $out" ;; esac
echo PASS
