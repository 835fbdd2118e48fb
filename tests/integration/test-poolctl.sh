#!/bin/bash
# poolctl: a clear message without a daemon; drain/undrain; the JSON carries every field.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=2 SOFTGPU_MEMORY=256M

set +e
out=$("$POOLCTL" -s "$T/none.sock" status 2>&1)
rc=$?
set -e
[ $rc -eq 1 ] || fail "poolctl without a daemon should exit 1"
case "$out" in *"gpupoold is not running"*) ;; *) fail "unclear message: $out" ;; esac

gp_config "queue_timeout 0" "admin_group $(id -gn)"
gp_start
# Root and the admin group only.
[ "$(stat -c %a "$T/admin.sock")" = 660 ] || fail "admin socket mode $(stat -c %a "$T/admin.sock")"
[ "$(stat -c %G "$T/admin.sock")" = "$(id -gn)" ] || fail "admin socket group"
# A second daemon on the same admin socket does not take it from the first.
set +e
out=$("$GP_STAGE/bin/gpupoold" -f "$T/gpupoold.conf" 2>&1)
set -e
case "$out" in *"another gpupoold is running there"*) ;; *) fail "second daemon: $out" ;; esac
sed -e "s|$T/admin.sock|$T/other.sock|" -e '$a admin_group nosuchgroup' "$T/gpupoold.conf" >"$T/bad.conf"
set +e
out=$("$GP_STAGE/bin/gpupoold" -f "$T/bad.conf" 2>&1)
set -e
case "$out" in *"cannot give it to group nosuchgroup: no such group"*) ;; *) fail "bad admin_group: $out" ;; esac
"$POOLCTL" -s "$T/admin.sock" drain 0 | grep -q "takes no new sessions" || fail "drain"
assert_status '.gpus[0].draining == true and .gpus[1].draining == false' "GPU 0 draining"
hold A 4096
assert_status '.sessions[0].gpus == [1]' "a drained GPU gets no new session"
"$POOLCTL" -s "$T/admin.sock" drain 1 >/dev/null
set +e
out=$(GPUPOOL_LOG=error run_client "$GP_STAGE/bin/vector_add" 100 2>&1)
set -e
case "$out" in *"refused"*) ;; *) fail "with every GPU draining, sessions are refused: $out" ;; esac
"$POOLCTL" -s "$T/admin.sock" undrain 0 >/dev/null
out=$(run_client "$GP_STAGE/bin/vector_add" 100) || fail "undrained GPU should take sessions: $out"
set +e
"$POOLCTL" -s "$T/admin.sock" drain 7 2>"$T/err"
rc=$?
set -e
[ $rc -eq 1 ] && grep -q "no GPU 7" "$T/err" || fail "drain of a missing GPU"
status_json | jq -e '.sessions[0] | has("tenant") and has("client") and has("program")
	and has("memory_used") and has("memory_peak") and has("memory_limit") and has("calls")
	and has("bytes_in") and has("bytes_out") and has("started") and has("last_active")
	and has("client_host") and has("client_pid") and has("gpus")' >/dev/null ||
	fail "the JSON lacks session fields"
"$POOLCTL" -s "$T/admin.sock" sessions | grep -q hold_session || fail "poolctl sessions"
"$POOLCTL" -s "$T/admin.sock" | grep -q "^GPU" || fail "poolctl with no command shows status"
release A
gp_stop
echo PASS
