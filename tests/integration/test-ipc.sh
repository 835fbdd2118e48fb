#!/bin/bash
# CUDA IPC on softgpu between two processes (tests/integration/ipc.c): the importer reads the
# exporter's memory, rewrites it with a kernel and records an interprocess event the exporter
# waits on; a process that may not read the exporter's descriptors (another user) is
# refused, as is any process once the exporter has gone. Through the pool: test-ipc-pool.sh.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=256M

D=$T/ipc
mkdir -m 0755 "$D"
chmod 0755 "$T"
on_softgpu "$GP_TESTBIN/ipc" export "$D" >"$T/export.out" 2>&1 &
A=$!
for _ in $(seq 1 600); do
	[ -f "$D/handle" ] && break
	kill -0 "$A" 2>/dev/null || fail "the exporter ended early: $(cat "$T/export.out")"
	sleep 0.05
done
[ -f "$D/handle" ] || fail "no handle from the exporter"
chmod 0644 "$D/handle"

out=$(on_softgpu "$GP_TESTBIN/ipc" import "$D" 2>&1) || fail "importer: $out"
echo "$out"

# Another user may not read the exporter's descriptors: the kernel refuses, so does softgpu.
# (Tried when this runs as root and nobody can run the test program and softgpu.)
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
other=0
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
	nobody test -x "$GP_TESTBIN/ipc" -a -r "$GP_SOFTGPU" -a -r "$D/handle"; then
	other=1
fi
if [ "$other" = 1 ]; then
	out=$(on_softgpu setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$GP_TESTBIN/ipc" refused "$D" 2>&1) || fail "another user: $out"
	case "$out" in REFUSED*INVALID_HANDLE*) ;; *) fail "another user: $out" ;; esac
	echo "another user: $out"
else
	echo "not root, or nobody cannot run the build: the other-user refusal is not tried"
fi

touch "$D/release"
wait "$A" || fail "exporter: $(cat "$T/export.out")"
cat "$T/export.out"
grep -q "^OK exporter" "$T/export.out" || fail "exporter: $(cat "$T/export.out")"

# The exporter is gone: its handles open nothing.
out=$(on_softgpu "$GP_TESTBIN/ipc" refused "$D" 2>&1) || fail "after the exporter: $out"
case "$out" in REFUSED*) ;; *) fail "after the exporter: $out" ;; esac
echo "after the exporter exited: $out"

# The pool's way: the exporter not dumpable, its descriptors handed over (softgpu_ipc.h).
D3=$T/handover
mkdir -m 0755 "$D3"
out=$(IPC_AS_NOBODY=$other on_softgpu "$GP_TESTBIN/ipc" handover "$D3" 2>&1) ||
	fail "handover: $out"
case "$out" in "OK handover"*) ;; *) fail "handover: $out" ;; esac
echo "$out"

# Through the pool: test-ipc-pool.sh.
echo PASS
