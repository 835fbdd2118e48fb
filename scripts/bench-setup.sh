#!/bin/bash
# bench-setup.sh [BUILD_DIR] -- session setup, cold and warm: p50 and p99 of N sessions each
# way (docs/performance.md, "Session setup: warm workers"). Two daemons run side by side on
# loopback TLS, one with `warm_workers 0` (cold: a worker is spawned for each connection)
# and one with the default `warm_workers 1` (warm: started ahead, driver loaded); sessions
# alternate between them, one at a time. Each session is a `gpupool-bench --child setup`
# process: cuInit, cuDeviceGet and cuCtxCreate timed (connect, TLS, Hello, admission, the
# worker's cuInit and first context: setup_ms), then one launch whose result is checked.
# The whole process, start to exit, is timed too. Nothing here judges a number.
#
#   scripts/bench-setup.sh                 # N=200 each way, the build tree in ./build
#   N=50 scripts/bench-setup.sh build-rel
#   GPUPOOL_BENCH_DRIVER=/usr/lib/x86_64-linux-gnu/libcuda.so.1 scripts/bench-setup.sh
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
stage=$build/stage
N=${N:-200}
bench=$stage/bin/gpupool-bench
interposer=$stage/lib/gpupool/libcuda.so.1
driver=${GPUPOOL_BENCH_DRIVER:-$stage/lib/gpupool/softgpu/libcuda.so.1}
for f in "$bench" "$interposer" "$driver" "$stage/bin/gpupoold" "$stage/bin/poolctl"; do
	[ -e "$f" ] || { echo "bench-setup: $f is missing (build first)" >&2; exit 1; }
done

T=$(mktemp -d "${TMPDIR:-/tmp}/bench-setup.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
"$top/scripts/gen-certs.sh" "$T/certs" >/dev/null

declare -A server
for mode in cold warm; do
	warm=1
	[ "$mode" = cold ] && warm=0
	cat >"$T/$mode.conf" <<EOF
listen 127.0.0.1:0
tls_cert $T/certs/server.pem
tls_key $T/certs/server.key
driver $driver
admin_socket $T/$mode.sock
log_level warn
warm_workers $warm
EOF
	"$stage/bin/gpupoold" -f "$T/$mode.conf" 2>"$T/$mode.log" &
	pids+=($!)
	for _ in $(seq 1 100); do
		if s=$("$stage/bin/poolctl" -s "$T/$mode.sock" status --json 2>/dev/null); then
			server[$mode]=$(jq -r .listen <<<"$s")
			break
		fi
		sleep 0.1
	done
	[ -n "${server[$mode]:-}" ] || { cat "$T/$mode.log" >&2; exit 1; }
done
sleep 1 # the warm daemon's first worker is started

export GPUPOOL_CA=$T/certs/ca.pem
for i in $(seq 1 "$N"); do
	for mode in cold warm; do
		t0=$(date +%s%N)
		if ! GPUPOOL_SERVER=${server[$mode]} "$bench" --child setup "$interposer" >"$T/out" 2>&1; then
			echo "bench-setup: session $i ($mode) failed:" >&2
			cat "$T/out" >&2
			exit 1
		fi
		t1=$(date +%s%N)
		awk '$1 == "setup_ms" { print $2 }' "$T/out" >>"$T/$mode.setup"
		echo "$(( (t1 - t0) / 1000 ))" | awk '{ printf "%.3f\n", $1 / 1000 }' >>"$T/$mode.wall"
	done
done

# pct FILE P: the P-th percentile (nearest rank) of the numbers in FILE.
pct() {
	sort -g "$1" | awk -v p="$2" '{ v[NR] = $1 } END { r = int((p * NR + 99) / 100); if (r < 1) r = 1; print v[r] }'
}
echo "session setup, $N sessions each way, alternating; driver $driver; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %12s %12s %12s %12s\n' "" "setup p50" "setup p99" "process p50" "process p99"
for mode in cold warm; do
	printf '%-6s %9s ms %9s ms %9s ms %9s ms\n' "$mode" "$(pct "$T/$mode.setup" 50)" \
		"$(pct "$T/$mode.setup" 99)" "$(pct "$T/$mode.wall" 50)" "$(pct "$T/$mode.wall" 99)"
done
