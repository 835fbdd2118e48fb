#!/bin/bash
# The accounting file: bad settings are refused naming file and line; rotation by size keeps
# every record across files; records survive a restart; a torn last line (a crash while
# writing) is skipped and counted; a file that cannot be written loses no record (the log
# keeps it) and does not stop the daemon.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G GPUPOOL_MEMORY=64M

usage() { "$POOLCTL" -s "$T/admin.sock" usage --since 2000-01-01 --json "$@"; }
one_session() { # a short session that ends cleanly
	out=$(echo | run_client "$GP_TESTBIN/hold_session" 4096 2>&1) || fail "session: $out"
	wait_for '.sessions | length == 0' 10
}

# Bad values: refused by -n and at start, naming the file and the line.
expect_refused() { # WANT CONFIG_LINE
	gp_config "$2"
	set +e
	"$GP_STAGE/bin/gpupoold" -n -f "$T/gpupoold.conf" >"$T/out" 2>&1
	rc=$?
	set -e
	[ $rc -ne 0 ] && grep -qF -- "$T/gpupoold.conf:7: $1" "$T/out" ||
		fail "'$2' should be refused with '$1': $(cat "$T/out")"
}
expect_refused "'accounting_max_bytes lots': expected 0" "accounting_max_bytes lots"
expect_refused "'accounting_keep 0': expected a number from 1" "accounting_keep 0"
expect_refused "'accounting_file usage.jsonl': expected the absolute path" \
	"accounting_file usage.jsonl"
# A file that cannot be opened stops the daemon at start, with the reason.
gp_config "accounting_file $T/missing/usage.jsonl"
set +e
"$GP_STAGE/bin/gpupoold" -f "$T/gpupoold.conf" >"$T/out" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && grep -qF "accounting_file $T/missing/usage.jsonl: No such file" "$T/out" ||
	fail "an unusable accounting_file should stop the start: $(cat "$T/out")"

# Rotation: at most 1200 bytes a file, two records each; none is lost.
mkdir -p "$T/acct"
ACCT=$T/acct/usage.jsonl
gp_config "accounting_file $ACCT" "accounting_max_bytes 1200" "accounting_keep 20" "drain_grace 0"
gp_start
for _ in 1 2 3 4 5 6; do one_session; done
ls -l "$T/acct"
[ -f "$ACCT.1" ] && [ -f "$ACCT.2" ] || fail "six records in 1200-byte files should rotate twice"
for f in "$T"/acct/*; do
	[ "$(stat -c %s "$f")" -le 1200 ] || fail "$f is past accounting_max_bytes"
done
cat "$T"/acct/* | jq -s -e 'length == 6 and (map(.session) | unique | length) == 6' >/dev/null ||
	fail "six sessions, six records across the files"
usage >"$T/u.json"
nfiles=$(ls "$T/acct" | wc -l)
jq -e ".records == 6 and .total.sessions == 6 and .skipped == 0 and
	(.files | length) == $nfiles and .files[-1] == \"$ACCT\" and .files[0] == \"$ACCT.$((nfiles - 1))\"" \
	"$T/u.json" >/dev/null || fail "usage reads every file, oldest first: $(cat "$T/u.json")"
want=$(cat "$T"/acct/* | jq -s 'map(.bytes_in) | add')
jq -e ".total.bytes_in == $want" "$T/u.json" >/dev/null || fail "bytes_in summed across files"

# A restart: the records are still there and still summed.
gp_stop
gp_start
usage | jq -e '.records == 6 and .total.sessions == 6' >/dev/null ||
	fail "after a restart: $(usage)"

# A torn last line, as a crash in the middle of a write leaves, and a line far longer than
# any record: skipped and counted; the next record starts a line of its own.
gp_stop
head -c 100000 /dev/zero | tr '\0' x >>"$ACCT.1"
echo >>"$ACCT.1"
printf '{"v":1,"session":999,"tenant":"mallo' >>"$ACCT"
gp_start
usage | jq -e '.records == 6 and .skipped == 2 and .total.sessions == 6' >/dev/null ||
	fail "a torn line: $(usage)"
one_session
grep -q "ended in the middle of a line" "$T/daemon.log" || fail "the torn line should be logged"
tail -n 1 "$ACCT" | jq -e '.ended == "client_closed"' >/dev/null || fail "the new record is whole"
usage | jq -e '.records == 7 and .skipped == 2 and .total.sessions == 7' >/dev/null ||
	fail "after the torn line: $(usage)"

# The file cannot be written (its directory is gone): the daemon logs the record, carries on,
# and writes the next one once it can.
rm -rf "$T/acct"
one_session
grep -q "accounting: cannot open $ACCT for the record of session" "$T/daemon.log" ||
	fail "a failed write should be logged"
grep -q "accounting: record of session .*, part 1/1: {" "$T/daemon.log" ||
	fail "the record a write lost should be in the log"
kill -0 "$DAEMON_PID" || fail "a failed write must not stop the daemon"
mkdir -p "$T/acct"
one_session
usage | jq -e '.records == 1 and .total.sessions == 1' >/dev/null ||
	fail "writing again once the file can be written: $(usage)"

# A reload moves the records to another file; a bad value there keeps the running one.
gp_config "accounting_file $T/acct/other.jsonl" "accounting_max_bytes 1200" \
	"accounting_keep 20" "drain_grace 0"
"$POOLCTL" -s "$T/admin.sock" reload >/dev/null || fail "reload"
one_session
[ "$(wc -l <"$T/acct/other.jsonl")" -eq 1 ] || fail "after a reload the record goes to the new file"
echo "accounting_keep none" >>"$T/gpupoold.conf"
set +e
"$POOLCTL" -s "$T/admin.sock" reload 2>"$T/err"
rc=$?
set -e
line=$(grep -n '^accounting_keep none' "$T/gpupoold.conf" | cut -d: -f1) # 11, or 12 with worker_uids
[ $rc -eq 1 ] && grep -qF "gpupoold.conf:$line: 'accounting_keep none'" "$T/err" ||
	fail "a bad reload should name file and line: $(cat "$T/err")"
ACCT=$T/acct/other.jsonl

# SIGTERM with a session running and drain_grace 0: it is ended, and its record is written
# before the daemon exits.
hold D 4096
gp_stop
release D || true
tail -n 1 "$ACCT" | jq -e '.ended == "drained"' >/dev/null ||
	fail "a session ended by the drain: $(tail -n 1 "$ACCT")"
echo PASS
