#!/bin/bash
# poolctl evict ends a session; its memory is freed; its client's next call fails.
. "$(dirname "$0")/lib.sh"

gp_start
hold A 1048576
id=$(status_json | jq -r '.sessions[0].id')
"$POOLCTL" -s "$T/admin.sock" evict "$id" | grep -q "being ended" || fail "evict should confirm"
wait_for '.sessions | length == 0' 10
assert_status '.gpus[0].memory_used == 0' "memory is free after eviction"
release A && fail "the evicted client's next call should fail"
grep -q "session $id.*evicted by poolctl" "$T/daemon.log" || fail "the eviction should be logged"
set +e
"$POOLCTL" -s "$T/admin.sock" evict 4242 2>"$T/err"
rc=$?
set -e
[ $rc -eq 1 ] && grep -q "no session 4242" "$T/err" || fail "evicting an unknown session: $(cat "$T/err")"
gp_stop
echo PASS
