#!/bin/bash
# Managed and mapped page-locked memory (managed.c): directly on softgpu and through the
# pool; then only the pages that changed move: rounds of three host-written pages and one
# kernel-changed page move exactly those bytes, by the session's own counters in
# `poolctl status` (managed_in, managed_out); a hostile client's pushes outside its managed
# memory are refused; copies into mapped memory survive a push before their bytes come
# (each transport); a heap object on a registration's edge page takes read(2).
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G

out=$(on_softgpu "$GP_TESTBIN/managed" 2>&1) || fail "softgpu: $out"
echo "softgpu: $out"
gp_config
gp_start
out=$(run_client "$GP_TESTBIN/managed" 2>&1) || fail "pool: $out"
echo "pool: $out"
wait_for '.sessions | length == 0' 10
out=$("$GP_TESTBIN/raw_client" managed 2>&1) || fail "raw managed calls: $out"
echo "$out"

rm -f "$T/S.in" "$T/S.out"
mkfifo "$T/S.in"
env LD_PRELOAD="$CLIENT_PRELOAD" "$CLIENT_ASAN" "$GP_TESTBIN/managed" sparse \
	<"$T/S.in" >"$T/S.out" 2>"$T/S.err" &
S_PID=$!
exec {S_IN}>"$T/S.in"
until_line() {
	for _ in $(seq 1 1200); do
		grep -qx "$1" "$T/S.out" 2>/dev/null && return 0
		kill -0 "$S_PID" 2>/dev/null || break
		sleep 0.05
	done
	fail "managed sparse: no '$1': $(cat "$T/S.out" "$T/S.err")"
}
until_line ready
wait_for '.sessions | length == 1' 10
# The first round moved the whole 4 MiB each way: the host wrote it all, the kernel too.
assert_status '.sessions[0].managed_in == 4194304' "4 MiB pushed at first"
assert_status '.sessions[0].managed_out == 4194304' "4 MiB back at first"
echo >&"$S_IN"
until_line done
# 20 rounds: three pages pushed, one page back, each.
assert_status ".sessions[0].managed_in == 4194304 + 20 * 3 * 4096" "only written pages pushed"
assert_status ".sessions[0].managed_out == 4194304 + 20 * 4096" "only changed pages back"
echo >&"$S_IN"
exec {S_IN}>&-
wait "$S_PID" || fail "managed sparse: $(cat "$T/S.out" "$T/S.err")"
grep -q FAIL "$T/S.out" && fail "managed sparse: $(cat "$T/S.out")"
cat "$T/S.out"
wait_for '.sessions | length == 0' 10

# Managed and mapped memory are charged to the session: past its limit OUT_OF_MEMORY.
rm -f "$T/L.in" "$T/L.out"
mkfifo "$T/L.in"
GPUPOOL_MEMORY=64M env LD_PRELOAD="$CLIENT_PRELOAD" "$CLIENT_ASAN" "$GP_TESTBIN/managed" limit \
	<"$T/L.in" >"$T/S.out" 2>"$T/S.err" &
S_PID=$!
exec {S_IN}>"$T/L.in"
until_line ready
wait_for '.sessions | length == 1' 10
base=$(status_json | jq '.sessions[0].memory_used')
echo >&"$S_IN"
until_line held
assert_status ".sessions[0].memory_used == $base + 41943040" "40 MiB charged while held"
echo >&"$S_IN"
until_line freed
wait_for ".sessions[0].memory_used == $base" 10
echo >&"$S_IN"
exec {S_IN}>&-
wait "$S_PID" || fail "managed limit: $(cat "$T/S.out" "$T/S.err")"
grep -q FAIL "$T/S.out" && fail "managed limit: $(cat "$T/S.out")"
cat "$T/S.out"

# A heap object on an edge page of a registration takes read(2) after a push: only the
# registration's own whole pages are write-protected.
out=$(run_client "$GP_TESTBIN/managed" edge 2>&1) || fail "managed edge: $out"
echo "$out"
gp_stop

# Copies into mapped memory while another stream's call pushes managed pages before the
# bytes come: over TLS, and over the transports whose recv() would fail on a protected page.
gp_config "listen_unix $T/client.sock" "listen_plain 127.0.0.1:0" "token 0123456789abcdef0123 bob"
gp_start
plain=$(status_json | jq -r .listen_plain)
out=$(run_client "$GP_TESTBIN/managed" efault 2>&1) || fail "managed efault over TLS: $out"
echo "tls: $out"
out=$(GPUPOOL_SERVER=unix:$T/client.sock run_client "$GP_TESTBIN/managed" efault 2>&1) ||
	fail "managed efault over the Unix socket: $out"
echo "unix: $out"
out=$(GPUPOOL_SERVER=plain:$plain GPUPOOL_TOKEN=0123456789abcdef0123 \
	run_client "$GP_TESTBIN/managed" efault 2>&1) || fail "managed efault over plain TCP: $out"
echo "plain: $out"

# A fault that is not the interposer's still ends a program without a handler of its own.
set +e
run_client "$GP_TESTBIN/managed" crash >"$T/C.out" 2>&1
rc=$?
set -e
cat "$T/C.out"
[ $rc -eq 139 ] || fail "managed crash: exit status $rc, expected 139 (SIGSEGV)"
grep -q FAIL "$T/C.out" && fail "managed crash: $(cat "$T/C.out")"
gp_stop
echo PASS
