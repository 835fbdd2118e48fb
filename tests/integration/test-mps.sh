#!/bin/bash
# MPS control daemons owned by the pool (gpu N mps on), checked against a stand-in of
# nvidia-cuda-mps-control (fake_mps_control.c) that only records what it is asked: this tests
# gpupoold's process management, not MPS. The daemon starts one per GPU with mps on, with its
# own pipe and log directories under mps_dir and that GPU visible; restarts it after it is
# killed (logged, with backoff); gives a worker on that GPU CUDA_MPS_PIPE_DIRECTORY and
# CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (and the thread percentage, which softgpu honours: the
# session sees fewer SMs); gives none to a worker on a GPU without; and at exit sends quit
# through the control program, then SIGTERM, then SIGKILL, to all at once without holding
# the supervisor's loop. Bad gpu lines stop gpupoold -n with FILE:LINE.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=2 SOFTGPU_MEMORY=1G SOFTGPU_SMS=40 SOFTGPU_THREADS=8 GPUPOOL_MEMORY=64M
export FAKE_MPS_LOG=$T/mps.log
A=aaaaaaaaaaaaaaaaaaaa

# Bad values first: each names the file and line.
bad() {
	printf 'tls_cert a\ntls_key b\n%s\n' "$1" >"$T/bad.conf"
	if out=$("$GP_STAGE/bin/gpupoold" -n -f "$T/bad.conf" 2>&1); then
		fail "gpupoold -n took '$1'"
	fi
	case "$out" in *"$T/bad.conf:3: $2"*) ;; *) fail "'$1': $out" ;; esac
}
bad "gpu 0 mps maybe" "gpu 0: mps maybe: expected on or off"
bad "gpu 64 mps on" "gpu 64: not a GPU index (0-63)"
bad "gpu x mps on" "gpu x: not a GPU index"
bad "gpu 1 colour blue" "gpu 1: unknown setting 'colour' (mps)"
bad "gpu 1" "gpu 1: no settings"
bad "gpu 1 mps" "gpu 1: mps (nothing): expected on or off"
bad "mps_dir relative/dir" "'mps_dir relative/dir': expected an absolute path"
bad "tenant a priority=10" "tenant a: priority=10 is not a priority (0-9)"

# Directories that cannot be made stop the daemon at start.
: >"$T/afile"
gp_config "gpu 0 mps on" "mps_control $GP_TESTBIN/fake_mps_control" "mps_dir $T/afile/mps"
if timeout 60 "$GP_STAGE/bin/gpupoold" -f "$T/gpupoold.conf" 2>"$T/nodir.log"; then
	fail "gpupoold should not start without its MPS directories"
fi
grep -q "GPU 0: cannot make its MPS directories under $T/afile/mps" "$T/nodir.log" ||
	fail "the reason should be logged: $(cat "$T/nodir.log")"

gp_config "token $A alice" "gpu 0 mps on" "gpu 1 mps off" "gpu 5 mps on" \
	"mps_control $GP_TESTBIN/fake_mps_control" "mps_dir $T/mps" "queue_timeout 30"
gp_start
starts() { grep -c '^start ' "$FAKE_MPS_LOG" 2>/dev/null || true; }
for _ in $(seq 1 100); do [ "$(starts)" -ge 1 ] && break; sleep 0.05; done
[ "$(starts)" -eq 1 ] || fail "one control daemon should have started: $(cat "$FAKE_MPS_LOG" 2>&1)"
grep -qx "start pid=[0-9]* args=-f pipe=$T/mps/gpu0/pipe log=$T/mps/gpu0/log visible=0" "$FAKE_MPS_LOG" ||
	fail "the control daemon's arguments and environment: $(cat "$FAKE_MPS_LOG")"
[ -p "$T/mps/gpu0/pipe/control" ] || fail "the stand-in should have its pipe in its own directory"
[ ! -e "$T/mps/gpu1" ] || fail "GPU 1 has mps off: no directory for it"
grep -q "gpu 5 mps on: the pool has no such GPU" "$T/daemon.log" ||
	fail "a gpu line for a GPU the pool lacks should be a warning"
pid1=$(sed -n 's/^start pid=\([0-9]*\) .*/\1/p' "$FAKE_MPS_LOG" | head -n 1)
grep -q "GPU 0: MPS control daemon started ($GP_TESTBIN/fake_mps_control -f, pid $pid1, pipes in $T/mps/gpu0/pipe)" \
	"$T/daemon.log" || fail "the start should be logged"

# Killed: restarted after its backoff, logged.
kill -KILL "$pid1"
for _ in $(seq 1 200); do [ "$(starts)" -ge 2 ] && break; sleep 0.05; done
[ "$(starts)" -eq 2 ] || fail "the control daemon should be restarted: $(cat "$FAKE_MPS_LOG")"
pid2=$(sed -n 's/^start pid=\([0-9]*\) .*/\1/p' "$FAKE_MPS_LOG" | tail -n 1)
[ "$pid2" != "$pid1" ] || fail "the restart should be a new process"
grep -q "GPU 0: its MPS control daemon (pid $pid1) was killed by signal 9; restarting it in 1000 ms" \
	"$T/daemon.log" || fail "the death and the restart should be logged"

# A session with a 25% share on GPU 0 (spread: the first goes on GPU 0) is its client.
GPUPOOL_TOKEN=$A GPUPOOL_COMPUTE=25% hold A1 4096 --sms
case "$HELD" in READY*" sms 10") ;; *) fail "alice at 25% should see 10 of 40 SMs: $HELD" ;; esac
assert_status '.sessions[0] | .gpus == [0] and .compute == 25' "alice: GPU 0, 25%"
a_id=$(status_json | jq -r '.sessions[0].id')
grep -q "session $a_id: MPS client of $T/mps/gpu0/pipe, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=64M" \
	"$T/daemon.log" || fail "alice's worker should be an MPS client with its limit pinned"
# The next goes on GPU 1, which has no control daemon: no MPS for it.
GPUPOOL_TOKEN=$A hold B1 4096 --sms
case "$HELD" in READY*" sms 40") ;; *) fail "a session without a share sees 40 SMs: $HELD" ;; esac
b_id=$(status_json | jq -r ".sessions | map(select(.id != $a_id))[0].id")
assert_status ".sessions | map(select(.id == $b_id))[0].gpus == [1]" "the second session on GPU 1"
if grep -q "session $b_id: MPS client" "$T/daemon.log"; then
	fail "a session on GPU 1 (mps off) should not be an MPS client"
fi
release A1
release B1
wait_for '.sessions | length == 0' 10

# At exit: quit through the control program; the control daemon ends on it.
gp_stop
grep -qx "client cmd=quit" "$FAKE_MPS_LOG" || fail "quit should be sent: $(cat "$FAKE_MPS_LOG")"
grep -qx "quit pid=$pid2" "$FAKE_MPS_LOG" || fail "the control daemon should quit: $(cat "$FAKE_MPS_LOG")"
grep -q "GPU 0: MPS control daemon (pid $pid2) quit" "$T/daemon.log" || fail "the quit should be logged"
if kill -0 "$pid2" 2>/dev/null; then fail "the control daemon is still running"; fi

# One that does not quit is sent SIGTERM (after 5 s).
: >"$FAKE_MPS_LOG"
FAKE_MPS_IGNORE_QUIT=1 gp_start
for _ in $(seq 1 100); do [ "$(starts)" -ge 1 ] && break; sleep 0.05; done
pid3=$(sed -n 's/^start pid=\([0-9]*\) .*/\1/p' "$FAKE_MPS_LOG" | head -n 1)
[ -n "$pid3" ] || fail "no control daemon on the second start: $(cat "$FAKE_MPS_LOG")"
gp_stop
grep -qx "ignored quit pid=$pid3" "$FAKE_MPS_LOG" || fail "quit should be sent: $(cat "$FAKE_MPS_LOG")"
grep -qx "term pid=$pid3" "$FAKE_MPS_LOG" || fail "SIGTERM should follow: $(cat "$FAKE_MPS_LOG")"
grep -q "GPU 0: MPS control daemon (pid $pid3) did not quit; SIGTERM" "$T/daemon.log" ||
	fail "the SIGTERM should be logged"

# Stopping does not hold the supervisor's loop: two control daemons that ignore quit and
# SIGTERM are stopped together (both quits sent before either SIGTERM), the admin socket
# answers meanwhile, and SIGKILL ends them.
gp_config "gpu 0 mps on" "gpu 1 mps on" "mps_control $GP_TESTBIN/fake_mps_control" \
	"mps_dir $T/mps"
: >"$FAKE_MPS_LOG"
FAKE_MPS_IGNORE_QUIT=1 FAKE_MPS_IGNORE_TERM=1 gp_start
for _ in $(seq 1 100); do [ "$(starts)" -ge 2 ] && break; sleep 0.05; done
[ "$(starts)" -eq 2 ] || fail "two control daemons should start: $(cat "$FAKE_MPS_LOG")"
pids=$(sed -n 's/^start pid=\([0-9]*\) .*/\1/p' "$FAKE_MPS_LOG")
kill -TERM "$DAEMON_PID"
for _ in $(seq 1 200); do
	[ "$(grep -c '^ignored quit ' "$FAKE_MPS_LOG")" -ge 2 ] && break
	sleep 0.05
done
[ "$(grep -c '^ignored quit ' "$FAKE_MPS_LOG")" -eq 2 ] ||
	fail "both should be sent quit: $(cat "$FAKE_MPS_LOG")"
"$POOLCTL" -s "$T/admin.sock" status --json >"$T/stopping.json" ||
	fail "the admin socket should answer while the control daemons stop"
jq -e '.draining' "$T/stopping.json" >/dev/null || fail "the daemon should say it is draining"
if wait "$DAEMON_PID"; then DAEMON_PID=; else DAEMON_PID=; fail "gpupoold did not exit cleanly"; fi
first_term=$(grep -n '^ignored term ' "$FAKE_MPS_LOG" | head -n 1 | cut -d: -f1)
last_quit=$(grep -n '^ignored quit ' "$FAKE_MPS_LOG" | tail -n 1 | cut -d: -f1)
[ -n "$first_term" ] && [ "$last_quit" -lt "$first_term" ] ||
	fail "both quits should come before any SIGTERM: $(cat "$FAKE_MPS_LOG")"
for p in $pids; do
	grep -q "MPS control daemon (pid $p) did not end on SIGTERM; SIGKILL" "$T/daemon.log" ||
		fail "the SIGKILL of $p should be logged"
	grep -q "MPS control daemon (pid $p) was killed by signal 9" "$T/daemon.log" ||
		fail "$p should be reaped after SIGKILL"
	if kill -0 "$p" 2>/dev/null; then fail "control daemon $p is still running"; fi
done
echo PASS
