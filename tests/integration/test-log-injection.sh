#!/bin/bash
# A client whose program and host names hold a newline, a forged log line and terminal
# escapes: the daemon's log gets them escaped on the session's own line, `poolctl status`
# shows them escaped in their cells, and `--json` stays valid JSON that gives them back.
. "$(dirname "$0")/lib.sh"

EVIL=$'x\n gpupoold: info: forged\x1b[2J \xff'
gp_start
rm -f "$T/raw.in"
mkfifo "$T/raw.in"
RAW_PROGRAM=$EVIL RAW_HOST=$EVIL "$GP_TESTBIN/raw_client" hold <"$T/raw.in" >"$T/raw.out" 2>&1 &
RAW_PID=$!
exec {RAW_IN}>"$T/raw.in"
wait_for '(.sessions | length) == 1 and .sessions[0].state == "active"' 20

"$POOLCTL" -s "$T/admin.sock" status >"$T/table.txt" || fail "poolctl status"
cat "$T/table.txt"
if grep -q $'\x1b' "$T/table.txt"; then fail "poolctl status printed a raw ESC"; fi
if grep -q '^ gpupoold' "$T/table.txt"; then fail "poolctl status printed a forged row"; fi
grep -q 'x\\x0a\\x20gpupo' "$T/table.txt" || fail "poolctl status should show the escaped name"
# JSON: valid, the control bytes as \u escapes, the bad byte as U+FFFD.
status_json >"$T/s.json" || fail "poolctl status --json"
if grep -q $'\x1b' "$T/s.json"; then fail "--json printed a raw ESC"; fi
jq -e --arg p $'x\n gpupoold: info: forged\x1b[2J \xef\xbf\xbd' '.sessions[0].program == $p' \
	"$T/s.json" >/dev/null || { cat "$T/s.json"; fail "--json should give the name back"; }

exec {RAW_IN}>&-
wait "$RAW_PID" || fail "raw_client: $(cat "$T/raw.out")"
wait_for '.sessions | length == 0' 10
gp_stop
cat "$T/daemon.log"
if grep -q $'\x1b' "$T/daemon.log"; then fail "the log holds a raw ESC"; fi
if grep -q '^ gpupoold: info: forged' "$T/daemon.log"; then fail "the log holds a forged line"; fi
grep -q 'x\\x0a gpupoold: info: forged\\x1b\[2J \\xff' "$T/daemon.log" ||
	fail "the log should show the name escaped"
echo PASS
