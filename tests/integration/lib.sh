# lib.sh -- shared helpers for the integration tests: a real gpupoold on a
# loopback port with fresh certificates, softgpu as its driver, and clients
# run through the interposer. Sourced by each test-*.sh scenario.
#
# The test build passes: GP_STAGE (the build's install-shaped tree), GP_SRC
# (the source tree) and GP_TESTBIN (test programs).
set -eu

: "${GP_STAGE:?}" "${GP_SRC:?}" "${GP_TESTBIN:?}"
GP_INTERPOSER=$GP_STAGE/lib/gpupool/libcuda.so.1
GP_SOFTGPU=$GP_STAGE/lib/gpupool/softgpu/libcuda.so.1
# In a sanitizer build the libraries need its runtime (ASan or TSan) loaded first into programs
# that were not built with it (nvcc's, the examples); leaks there are not ours to judge.
CLIENT_PRELOAD=$GP_INTERPOSER
CLIENT_ASAN=ASAN_OPTIONS=${ASAN_OPTIONS:-}
if [ -n "${GP_SAN_RUNTIME:-}" ]; then
	CLIENT_PRELOAD=$GP_SAN_RUNTIME:$GP_INTERPOSER
	CLIENT_ASAN=ASAN_OPTIONS=detect_leaks=0
fi
POOLCTL=$GP_STAGE/bin/poolctl

T=$(mktemp -d "${TMPDIR:-/tmp}/gpupool-test.XXXXXX")
DAEMON_PID=
export SOFTGPU_DEVICES=${SOFTGPU_DEVICES:-1}

fail() {
	echo "FAIL: $*" >&2
	if [ -f "$T/daemon.log" ]; then
		echo "---- daemon log ----" >&2
		tail -n 60 "$T/daemon.log" >&2
	fi
	exit 1
}

cleanup() {
	if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
		kill -KILL "$DAEMON_PID" 2>/dev/null || true
	fi
	# Worker processes of a killed daemon exit when their clients go away.
	rm -rf "$T"
}
trap cleanup EXIT

# As root the workers run as users of their own (worker_uids), as a real pool's should: a
# range of 256 uids per test run, so that runs side by side rarely share one (sharing would
# only weaken what the range isolates). GP_TEST_WORKER_UIDS=0: the workers keep root.
GP_WORKER_UIDS=
if [ "$(id -u)" -eq 0 ] && [ "${GP_TEST_WORKER_UIDS:-1}" != 0 ]; then
	GP_WORKER_UID0=$(( 3000000 + ($$ % 30000) * 256 ))
	GP_WORKER_UIDS="$GP_WORKER_UID0-$(( GP_WORKER_UID0 + 255 ))"
fi

# gp_config [extra config lines...]: writes $T/gpupoold.conf.
gp_config() {
	[ -f "$T/certs/ca.pem" ] || "$GP_SRC/scripts/gen-certs.sh" "$T/certs" >/dev/null
	{
		echo "listen 127.0.0.1:0"
		echo "tls_cert $T/certs/server.pem"
		echo "tls_key $T/certs/server.key"
		echo "driver $GP_SOFTGPU"
		echo "admin_socket $T/admin.sock"
		echo "log_level debug"
		for line in "$@"; do echo "$line"; done
		# Last, so that the tests' own lines keep their numbers; not over a test's own.
		case " $* " in
		*" worker_uids "*) ;;
		*) [ -z "$GP_WORKER_UIDS" ] || echo "worker_uids $GP_WORKER_UIDS" ;;
		esac
	} >"$T/gpupoold.conf"
}

status_json() {
	"$POOLCTL" -s "$T/admin.sock" status --json
}

# gp_start: starts the daemon and waits until it answers; sets GPUPOOL_SERVER.
gp_start() {
	[ -f "$T/gpupoold.conf" ] || gp_config
	"$GP_STAGE/bin/gpupoold" -f "$T/gpupoold.conf" 2>>"$T/daemon.log" &
	DAEMON_PID=$!
	for _ in $(seq 1 200); do
		if status_json >"$T/status.json" 2>/dev/null; then
			GPUPOOL_SERVER=$(jq -r .listen "$T/status.json")
			export GPUPOOL_SERVER GPUPOOL_CA="$T/certs/ca.pem"
			return 0
		fi
		kill -0 "$DAEMON_PID" 2>/dev/null || fail "gpupoold exited at start"
		sleep 0.1
	done
	fail "gpupoold did not answer on its admin socket"
}

# gp_stop: SIGTERM and wait; the daemon must exit 0.
gp_stop() {
	kill -TERM "$DAEMON_PID"
	if ! wait "$DAEMON_PID"; then
		DAEMON_PID=
		fail "gpupoold did not exit cleanly"
	fi
	DAEMON_PID=
}

# run_client CMD...: runs a CUDA program through the interposer.
run_client() {
	env LD_PRELOAD="$CLIENT_PRELOAD" "$CLIENT_ASAN" "$@"
}

# on_softgpu CMD...: runs a CUDA program directly on softgpu, no pool.
on_softgpu() {
	env LD_LIBRARY_PATH="$GP_STAGE/lib/gpupool/softgpu" "$CLIENT_ASAN" \
		${GP_SAN_RUNTIME:+"LD_PRELOAD=$GP_SAN_RUNTIME"} "$@"
}

# wait_for JQ_EXPR [SECONDS]: until `poolctl status --json | jq -e JQ_EXPR` holds.
wait_for() {
	local expr=$1 tries=$(( ${2:-10} * 20 ))
	for _ in $(seq 1 "$tries"); do
		if status_json >"$T/status.json" 2>/dev/null && jq -e "$expr" "$T/status.json" >/dev/null; then
			return 0
		fi
		sleep 0.05
	done
	echo "last status:" >&2
	cat "$T/status.json" >&2 || true
	fail "timed out waiting for: $expr"
}

# assert_status JQ_EXPR MESSAGE: the current status satisfies JQ_EXPR.
assert_status() {
	status_json >"$T/status.json" || fail "poolctl status failed"
	jq -e "$1" "$T/status.json" >/dev/null || { cat "$T/status.json" >&2; fail "$2"; }
}

# client_start NAME PROGRAM ARGS...: runs $GP_TESTBIN/PROGRAM ARGS through the pool in the
# background as NAME, its stdin a fifo held open in fd ${NAME}_IN, its stdout in
# $T/NAME.out; pid in ${NAME}_PID. Environment set on the call (VAR=x client_start ...)
# reaches the client.
client_start() {
	local name=$1 prog=$2 fd
	shift 2
	rm -f "$T/$name.in" "$T/$name.out"
	mkfifo "$T/$name.in"
	# A plain command, so the pid is the client's own (kill -9 reaches it).
	env LD_PRELOAD="$CLIENT_PRELOAD" "$CLIENT_ASAN" "$GP_TESTBIN/$prog" "$@" \
		<"$T/$name.in" >"$T/$name.out" \
		2>"$T/$name.err" &
	eval "${name}_PID=$!"
	exec {fd}>"$T/$name.in"
	eval "${name}_IN=$fd"
}

# client_said NAME LINE: waits (up to a minute) until NAME has printed LINE; fails the test
# if it printed ERROR or ended first.
client_said() {
	local name=$1 pid
	eval "pid=\${${name}_PID}"
	for _ in $(seq 1 1200); do
		grep -qx "$2" "$T/$name.out" 2>/dev/null && return 0
		grep -q ERROR "$T/$name.out" 2>/dev/null && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	fail "$name did not say $2: $(cat "$T/$name.out" "$T/$name.err" 2>/dev/null)"
}

# client_step NAME: tells NAME to go on (a line on its stdin).
client_step() {
	local fd
	eval "fd=\${${1}_IN}"
	echo >&"$fd"
}

# hold_start NAME ARGS...: client_start NAME hold_session ARGS.
hold_start() {
	local name=$1
	shift
	client_start "$name" hold_session "$@"
}

# hold_line NAME [SECONDS]: waits for NAME's first line and leaves it in $HELD.
hold_line() {
	local name=$1 tries=$(( ${2:-60} * 20 ))
	HELD=
	for _ in $(seq 1 "$tries"); do
		if [ -s "$T/$name.out" ] && grep -q . "$T/$name.out"; then
			HELD=$(head -n 1 "$T/$name.out")
			return 0
		fi
		sleep 0.05
	done
	HELD="(nothing: $(cat "$T/$name.err" 2>/dev/null))"
}

# hold NAME ARGS...: hold_start, then hold_line.
hold() {
	hold_start "$@"
	hold_line "$1"
}

# release NAME: tells a held session to finish and waits for it; its exit status.
release() {
	local name=$1 fd pid
	eval "fd=\${${name}_IN}; pid=\${${name}_PID}"
	echo >&"$fd" 2>/dev/null || true
	exec {fd}>&-
	wait "$pid"
}
