#!/bin/bash
# A worker runs a tenant's calls, so before the first of them it gives up what it does not
# need: it sets no_new_privs (no setuid or file-capability exec gains anything, and the
# supervisor knows its processes by it).
. "$(dirname "$0")/lib.sh"

gp_config
gp_start
hold H 4096
case "$HELD" in READY*) ;; *) fail "hold_session: $HELD" ;; esac
status_json >"$T/status.json"
wpid=$(jq -r '.sessions[0].worker_pid' "$T/status.json")
[ -n "$wpid" ] && [ "$wpid" != null ] && [ -d "/proc/$wpid" ] || fail "no worker pid: $wpid"
grep -q '^NoNewPrivs:[[:space:]]*1' "/proc/$wpid/status" ||
	fail "the worker should run with no_new_privs: $(grep NoNewPrivs "/proc/$wpid/status")"
release H || fail "hold_session failed"
gp_stop
echo PASS
