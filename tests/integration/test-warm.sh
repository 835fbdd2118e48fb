#!/bin/bash
# Warm workers (warm_workers N per GPU): started ahead with the driver loaded, each hands
# one session its worker at once and is never used for another; the pool keeps N ready,
# follows a reload, and a stopping daemon does not wait for them.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=2

gp_config "warm_workers 2"
gp_start
wait_for '.warm_workers == 4' 20 # 2 per GPU, 2 GPUs
out=$(run_client "$GP_STAGE/bin/vector_add" 5000) || fail "vector_add: $out"
case "$out" in *PASSED*) ;; *) fail "vector_add: $out" ;; esac
grep -q "session 1: warm worker [0-9]* for" "$T/daemon.log" || fail "session 1 should get a warm worker"
# A warm worker pays OpenSSL's first-use costs ahead (gp_tls_warm_up): it is started with
# the pool's certificate (public), never its key.
# (Once the used worker is gone and its replacement is up; a worker may still exit while
# it is listed, so a cmdline that is gone reads as nothing.)
wait_for '.warm_workers == 4 and (.sessions | length) == 0' 20
warm_args=""
for p in $(pgrep -P "$DAEMON_PID" gpupool-worker); do
	warm_args+="$( (tr '\0' ' ' <"/proc/$p/cmdline") 2>/dev/null || true) "
done
case "$warm_args" in *"--warm "*"--tls-cert $T/"*) ;; *) fail "warm workers without --tls-cert: $warm_args" ;; esac
case "$warm_args" in *.key*) fail "a warm worker was given a key path: $warm_args" ;; esac

# GPUPOOL_LOG_TIME=1: the client's setup steps, stamped with the monotonic clock, in order.
GPUPOOL_LOG=debug GPUPOOL_LOG_TIME=1 run_client "$GP_STAGE/bin/vector_add" 1000 \
	>"$T/timed.out" 2>"$T/timed.err" || fail "vector_add with GPUPOOL_LOG_TIME: $(cat "$T/timed.err")"
grep -q PASSED "$T/timed.out" || fail "vector_add with GPUPOOL_LOG_TIME: $(cat "$T/timed.out")"
stamp() { sed -n "s/^\[\([0-9]*\.[0-9]\{6\}\)\] gpupool: debug: setup: $1.*/\1/p" "$T/timed.err" | head -n 1; }
t_conn=$(stamp connecting)
t_tls=$(stamp "TLS handshake done")
[ -n "$t_conn" ] && [ -n "$t_tls" ] || fail "no stamped setup lines: $(head -n 5 "$T/timed.err")"
awk -v a="$t_conn" -v b="$t_tls" 'BEGIN { exit !(b >= a) }' ||
	fail "the handshake ($t_tls) is stamped before the connect ($t_conn)"
grep -v '^\[[0-9]*\.[0-9]\{6\}\] ' "$T/timed.err" | grep -q 'gpupool: ' &&
	fail "a line without its stamp: $(grep -v '^\[' "$T/timed.err" | head -n 1)"
wait_for '.warm_workers == 4 and (.sessions | length) == 0' 20

# A used worker ends with its session: the next session is another process. And a warm
# worker runs its session on the GPU it was placed on (spread: the second session on the
# second GPU): its driver starts only once the placement is known.
hold A 1048576
assert_status '.sessions | length == 1' "one session held"
pid=$(jq -r '.sessions[0].worker_pid' "$T/status.json")
hold C 1048576
assert_status '.sessions | length == 2' "two sessions held"
for s in A C; do
	line=$(head -n 1 "$T/$s.out")
	gpu=$(jq -r --arg p "$(eval echo \$${s}_PID)" '.sessions[] | select(.client_pid == ($p | tonumber)) | .gpus[0]' "$T/status.json")
	want=$(jq -r --argjson g "$gpu" '.gpus[] | select(.index == $g) | .uuid' "$T/status.json")
	case "$line" in *"uuid $want") ;; *) fail "session $s placed on GPU $gpu ($want) runs elsewhere: $line" ;; esac
done
release C
release A
wait_for '.sessions | length == 0' 10
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
kill -0 "$pid" 2>/dev/null && fail "the worker of a finished session ($pid) is still running"
hold B 1048576
assert_status ".sessions[0].worker_pid != $pid" "a worker must never serve a second session"
release B

# A reload to another count is followed.
gp_config "warm_workers 1"
kill -HUP "$DAEMON_PID"
wait_for '.warm_workers == 2' 20

# Without any (warm_workers 0), sessions get cold workers as before.
gp_config "warm_workers 0"
kill -HUP "$DAEMON_PID"
out=$(run_client "$GP_STAGE/bin/vector_add" 5000) || fail "vector_add, cold: $out"
grep -q "session [0-9]*: new worker [0-9]* for" "$T/daemon.log" || fail "a cold worker should be logged"

# A config value past the bound names file and line.
gp_config "warm_workers 17"
set +e
out=$("$GP_STAGE/bin/gpupoold" -n -f "$T/gpupoold.conf" 2>&1)
set -e
case "$out" in *gpupoold.conf:7*"at most 16"*) ;; *) fail "warm_workers 17: $out" ;; esac
gp_stop
echo PASS
