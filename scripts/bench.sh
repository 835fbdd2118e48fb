#!/bin/bash
# bench.sh -- measures what a CUDA program pays through gpupool on this machine, against a
# baseline taken in the same run: a bare TLS 1.3 connection between two processes on
# loopback (same library, certificates and frame sizes, no CUDA, no daemon). Runs the
# pool on softgpu; on a GPU host set GPUPOOL_BENCH_DRIVER to NVIDIA's libcuda.so.1.
#
# Two placements are measured, because on virtual machines waking a process on another
# CPU can cost more than everything else: client and server on one CPU, and on two.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
"$top/scripts/build.sh" "$build" >/dev/null
work=$(mktemp -d /tmp/gpupool-bench.XXXXXX)
daemon=
trap '[ -n "$daemon" ] && kill $daemon 2>/dev/null; rm -rf "$work"' EXIT
"$top/scripts/gen-certs.sh" "$work/certs" >/dev/null
driver=${GPUPOOL_BENCH_DRIVER:-$build/stage/lib/gpupool/softgpu/libcuda.so.1}
cat >"$work/conf" <<CONF
listen 127.0.0.1:0
tls_cert $work/certs/server.pem
tls_key $work/certs/server.key
driver $driver
admin_socket $work/admin.sock
listen_unix $work/client.sock
log_level warn
CONF
ncpu=$(nproc)
other=$((ncpu > 1 ? 1 : 0))
rounds=${ROUNDS:-5000}
mib=${MIB:-256}

val() { sed -n "s/^$1 //p" "$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

taskset -c 0 "$build/stage/bin/gpupoold" -f "$work/conf" 2>"$work/daemon.log" &
daemon=$!
for _ in $(seq 1 100); do
	"$build/stage/bin/poolctl" -s "$work/admin.sock" status --json >"$work/st" 2>/dev/null && break
	sleep 0.1
done
server=$(jq -r .listen "$work/st")

echo "gpupool benchmark: $ncpu CPU(s), driver $(basename "$(dirname "$driver")")/$(basename "$driver")"
for placement in same other; do
	cpu=0
	[ $placement = other ] && cpu=$other
	GP_BENCH_SERVER_CPU=0 GP_BENCH_CLIENT_CPU=$cpu "$build/tests/bench/bench_tls" \
		"$work/certs/server.pem" "$work/certs/server.key" "$work/certs/ca.pem" \
		"$rounds" "$mib" >"$work/tls"
	GPUPOOL_SERVER=$server GPUPOOL_CA=$work/certs/ca.pem \
		LD_PRELOAD="$build/stage/lib/gpupool/libcuda.so.1" \
		taskset -c $cpu "$build/tests/bench/bench_pool" "$rounds" "$mib" >"$work/pool"
	# The same over the Unix socket a client on the GPU host would use (no TLS).
	GPUPOOL_SERVER=unix:$work/client.sock LD_PRELOAD="$build/stage/lib/gpupool/libcuda.so.1" \
		taskset -c $cpu "$build/tests/bench/bench_pool" "$rounds" "$mib" >"$work/local"
	rtt=$(val tls_rtt_us "$work/tls")
	bw=$(val tls_mib_per_s "$work/tls")
	echo
	echo "client on CPU $cpu, server/worker on CPU 0:"
	printf "  %-34s %10s %12s\n" "" "measured" "vs TLS"
	printf "  %-34s %8s us %12s\n" "TLS round trip (baseline)" "$rtt" "1.00"
	printf "  %-34s %8s us %12s\n" "call round trip (cuCtxSynchronize)" \
		"$(val call_rtt_us "$work/pool")" "$(ratio "$(val call_rtt_us "$work/pool")" "$rtt")"
	printf "  %-34s %8s us %12s\n" "kernel launch, pipelined" \
		"$(val launch_us "$work/pool")" "$(ratio "$(val launch_us "$work/pool")" "$rtt")"
	printf "  %-34s %6s MiB/s %12s\n" "TLS bulk (baseline)" "$bw" "1.00"
	printf "  %-34s %6s MiB/s %12s\n" "cuMemcpyHtoD $mib MiB" "$(val htod_mib_per_s "$work/pool")" \
		"$(ratio "$(val htod_mib_per_s "$work/pool")" "$bw")"
	printf "  %-34s %6s MiB/s %12s\n" "cuMemcpyDtoH $mib MiB" "$(val dtoh_mib_per_s "$work/pool")" \
		"$(ratio "$(val dtoh_mib_per_s "$work/pool")" "$bw")"
	echo "  over the Unix socket (listen_unix):"
	printf "  %-34s %8s us %12s\n" "call round trip (cuCtxSynchronize)" \
		"$(val call_rtt_us "$work/local")" "$(ratio "$(val call_rtt_us "$work/local")" "$rtt")"
	printf "  %-34s %6s MiB/s %12s\n" "cuMemcpyHtoD $mib MiB" "$(val htod_mib_per_s "$work/local")" \
		"$(ratio "$(val htod_mib_per_s "$work/local")" "$bw")"
	printf "  %-34s %6s MiB/s %12s\n" "cuMemcpyDtoH $mib MiB" "$(val dtoh_mib_per_s "$work/local")" \
		"$(ratio "$(val dtoh_mib_per_s "$work/local")" "$bw")"
	[ "$ncpu" -gt 1 ] || break
done
