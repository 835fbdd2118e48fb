#!/bin/bash
# demo.sh -- build gpupool, install it into build/demo-install, and run the
# whole path on this machine: gpupoold with softgpu as its GPU driver, over TLS
# with certificates made for the demo; the unmodified vector_add example
# through the interposer; `poolctl status` while its session is alive; then a
# clean shutdown.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build
prefix=$build/demo-install
"$top/scripts/build.sh" "$build"
cmake --install "$build" --prefix "$prefix" >/dev/null

work=$(mktemp -d /tmp/gpupool-demo.XXXXXX)
daemon=
cleanup() {
	[ -n "$daemon" ] && kill "$daemon" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

"$top/scripts/gen-certs.sh" "$work/certs" >/dev/null
cat >"$work/gpupoold.conf" <<CONF
listen 127.0.0.1:0
tls_cert $work/certs/server.pem
tls_key $work/certs/server.key
driver $prefix/lib/gpupool/softgpu/libcuda.so.1
admin_socket $work/admin.sock
CONF

echo "== gpupoold on loopback, softgpu as the driver, TLS 1.3"
"$prefix/bin/gpupoold" -f "$work/gpupoold.conf" 2>"$work/daemon.log" &
daemon=$!
poolctl() { "$prefix/bin/poolctl" -s "$work/admin.sock" "$@"; }
for _ in $(seq 1 100); do
	poolctl status --json >/dev/null 2>&1 && break
	sleep 0.1
done
server=$(poolctl status --json | sed -n 's/.*"listen":"\([^"]*\)".*/\1/p')
echo "   listening on $server"

echo "== vector_add through the interposer (LD_PRELOAD=$prefix/lib/gpupool/libcuda.so.1)"
coproc APP { env LD_PRELOAD="$prefix/lib/gpupool/libcuda.so.1" GPUPOOL_SERVER="$server" \
	GPUPOOL_CA="$work/certs/ca.pem" "$prefix/share/gpupool/examples/vector_add" 1000000 --wait; }
read -r result <&"${APP[0]}"
echo "   $result"
read -r _ <&"${APP[0]}"

echo "== poolctl status, while the session holds its memory"
poolctl status | sed 's/^/   /'
echo >&"${APP[1]}"
wait "$APP_PID"
app_status=$?

echo "== stopping gpupoold (SIGTERM)"
kill -TERM "$daemon"
wait "$daemon" && daemon=
grep -E "session [0-9]+ ended|stopped" "$work/daemon.log" | sed 's/^/   /'
case "$result" in
*PASSED*) [ "$app_status" -eq 0 ] && echo "== demo OK" && exit 0 ;;
esac
echo "== demo FAILED" >&2
cat "$work/daemon.log" >&2
exit 1
