#!/bin/bash
# Metering: each ended session leaves one accounting record whose fields match what it did
# (tenant, GPUs, bytes each way, peak memory, how it ended: closed, killed, evicted), and
# `poolctl usage` sums the records by tenant, day and client host.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=1G GPUPOOL_MEMORY=64M

ALICE=aaaaaaaaaaaaaaaaaaaa BOB=bbbbbbbbbbbbbbbbbbbb
mkdir -p "$T/acct"
ACCT=$T/acct/usage.jsonl
gp_config "token $ALICE alice" "token $BOB bob" "accounting_file $ACCT"
gp_start
usage() { "$POOLCTL" -s "$T/admin.sock" usage "$@"; }
uuid=$(status_json | jq -r '.gpus[0].uuid')

# alice: 8 MiB each way, then a normal exit.
GPUPOOL_TOKEN=$ALICE hold A 8388608
case "$HELD" in READY*) ;; *) fail "alice: $HELD" ;; esac
id_a=$(status_json | jq -r '.sessions[0].id')
release A || fail "alice's session should end cleanly"
wait_for '.sessions | length == 0' 10
# alice: a kernel (vector_add), a normal exit.
out=$(GPUPOOL_TOKEN=$ALICE run_client "$GP_STAGE/bin/vector_add" 10000) || fail "vector_add: $out"
wait_for '.sessions | length == 0' 10
# bob: 4 MiB each way, then kill -9 of the client.
GPUPOOL_TOKEN=$BOB hold B 4194304
case "$HELD" in READY*) ;; *) fail "bob: $HELD" ;; esac
id_b=$(status_json | jq -r '.sessions[0].id')
kill -KILL "$B_PID"
wait_for '.sessions | length == 0' 10
# bob: evicted by poolctl.
GPUPOOL_TOKEN=$BOB hold C 1048576
case "$HELD" in READY*) ;; *) fail "bob again: $HELD" ;; esac
id_c=$(status_json | jq -r '.sessions[0].id')
"$POOLCTL" -s "$T/admin.sock" evict "$id_c" >/dev/null
# A session leaves the status only once its record is on disk.
wait_for '.sessions | length == 0' 10
release C && fail "the evicted client's next call should fail"

[ "$(wc -l <"$ACCT")" -eq 4 ] || { cat "$ACCT" >&2; fail "four sessions, four records"; }
jq -e . "$ACCT" >/dev/null || fail "every record is JSON"
rec() { jq -c "select(.session == $1)" "$ACCT"; }
ra=$(rec "$id_a") rb=$(rec "$id_b") rc=$(rec "$id_c")
rk=$(jq -c 'select(.program == "vector_add")' "$ACCT")
echo "record of the first session: $ra"
check() { # RECORD JQ_EXPR MESSAGE
	echo "$1" | jq -e "$2" >/dev/null || { echo "$1" >&2; fail "$3"; }
}
host=$(hostname)
check "$ra" ".tenant == \"alice\" and .ended == \"client_closed\" and .client_cert == \"\"" \
	"alice's session: tenant, and a client that closed it"
check "$ra" ".program == \"hold_session\" and .client_pid == $A_PID and .client_host == \"$host\"" \
	"the client as its Hello named it"
check "$ra" ".gpus == [0] and .gpu_uuids == [\"$uuid\"] and .mem_limit == 67108864" \
	"the GPU held (ordinal and UUID) and the reservation"
# 8 MiB allocated plus the context's 9 MiB (softgpu's default heap and printf buffer).
check "$ra" '.mem_peak == 17825792' "peak memory"
# Bytes each way: the session's decrypted stream, frames and all; the copies dominate.
check "$ra" '.bytes_in >= 8388608 and .bytes_in < 8388608 + 65536 and
	.bytes_out >= 8388608 and .bytes_out < 8388608 + 65536' "bytes each way"
# ... and exactly what the worker itself counted and logged at its end.
line=$(grep "session $id_a ended: tenant" "$T/daemon.log" | head -n 1)
win=$(echo "$line" | sed -n 's/.* in \([0-9]*\) bytes out.*/\1/p')
wout=$(echo "$line" | sed -n 's/.* out \([0-9]*\) bytes$/\1/p')
check "$ra" ".bytes_in == $win and .bytes_out == $wout" "the worker's own count ($line)"
# softgpu tells each session's kernel time (daemon/worker/busy.c): none ran in this one.
check "$ra" '.gpu_busy_seconds == 0' "busy time: no kernel ran, 0 measured"
check "$ra" '(.gpu_seconds - .held_s | fabs) < 0.002 and
	(.mem_gib_seconds - .held_s * 0.0625 | fabs) < 0.0002' "GPU- and GiB-seconds held"
check "$ra" '[.start, .admitted, .end] | all(test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$"))' \
	"times in RFC 3339, UTC"
check "$ra" '.start <= .admitted and .admitted <= .end' "start, admission, end in order"
check "$rk" '.tenant == "alice" and .ended == "client_closed" and .calls > 5' \
	"the kernel's session"
check "$rk" '.gpu_busy_seconds > 0 and .gpu_busy_seconds < .held_s' \
	"the kernel's session was busy, for less than it held the GPU"
check "$rb" '.tenant == "bob" and .ended == "client_gone" and .bytes_in >= 4194304' \
	"the killed client's session ends without a goodbye"
check "$rc" '.tenant == "bob" and .ended == "evicted"' "the evicted session"

# The sums, by tenant: they are the records' own, added.
today=$(date -u +%Y-%m-%d)
usage --since "$today" --json >"$T/u.json" || fail "poolctl usage failed"
cat "$T/u.json"
for t in alice bob; do
	want=$(jq -s -c --arg t "$t" 'map(select(.tenant == $t)) |
		{sessions: length, bytes_in: (map(.bytes_in) | add),
		 bytes_out: (map(.bytes_out) | add), calls: (map(.calls) | add),
		 mem_peak: (map(.mem_peak) | max)}' "$ACCT")
	got=$(jq -c --arg t "$t" '.rows[] | select(.key == $t) |
		{sessions, bytes_in, bytes_out, calls, mem_peak}' "$T/u.json")
	[ "$want" = "$got" ] || fail "usage for $t: $got, the records say $want"
done
jq -e '.records == 4 and .skipped == 0 and .total.sessions == 4 and (.rows | length) == 2 and
	.by == "tenant" and .until == null and .files == ["'"$ACCT"'"]' "$T/u.json" >/dev/null ||
	fail "usage: 4 records, 2 tenants"
want=$(jq -s 'map(select(.tenant == "alice") | .gpu_busy_seconds) | add' "$ACCT")
jq -e --argjson w "$want" '.rows[] | select(.key == "alice") | (.gpu_busy_seconds - $w | fabs) < 0.002' \
	"$T/u.json" >/dev/null || fail "alice's busy seconds should sum her records' ($want)"
# By day (UTC, the day each session ended) and by client host.
want=$(jq -s -c 'group_by(.end[0:10]) | map({key: .[0].end[0:10], sessions: length})' "$ACCT")
got=$(usage --since "$today" --by day --json | jq -c '[.rows[] | {key, sessions}]')
[ "$want" = "$got" ] || fail "usage by day: $got, the records say $want"
got=$(usage --since 2000-01-01 --by host --json | jq -c '[.rows[] | {key, sessions}]')
[ "$got" = "[{\"key\":\"$host\",\"sessions\":4}]" ] || fail "usage by host: $got"
# A range that holds none of them.
usage --since 2000-01-01 --until 2000-01-02T00:00:00Z --json >"$T/u.json"
jq -e '.records == 4 and (.rows | length) == 0 and .total.sessions == 0' "$T/u.json" >/dev/null ||
	fail "an empty range: $(cat "$T/u.json")"
echo "---- poolctl usage --since $today ----"
usage --since "$today" || fail "the table"
usage --since "$today" --by day || fail "the table by day"

# Bad requests: a clear reason, exit 2.
expect_usage_error() { # WANT ARGS...
	local want=$1 rc
	shift
	set +e
	usage "$@" >/dev/null 2>"$T/err"
	rc=$?
	set -e
	[ $rc -eq 2 ] && grep -q -- "$want" "$T/err" || fail "usage $*: rc $rc, $(cat "$T/err")"
}
expect_usage_error "--since is required"
expect_usage_error "'yesterday' is not a date" --since yesterday
expect_usage_error "--until must be later" --since 2026-12-01 --until 2026-11-30
expect_usage_error "expected tenant, host or day" --since 2026-12-01 --by week
expect_usage_error "unknown argument '--sinse'" --sinse 2026-12-01

# A worker that crashes still gets its record: the supervisor writes it. (SIGABRT: under
# ASan a SIGSEGV becomes an exit status.)
hold D 4096
id_d=$(status_json | jq -r '.sessions[0].id')
kill -ABRT "$(status_json | jq -r '.sessions[0].worker_pid')"
wait_for '.sessions | length == 0' 10
release D && fail "the client of a crashed worker should see an error"
check "$(rec "$id_d")" '.ended == "crashed" and (.detail | test("signal 6"))' \
	"a crashed worker's session"
gp_stop

# With client certificates, the record names the certificate (CN "default" from
# gen-certs.sh), which is also the tenant.
gp_config "tls_ca $T/certs/ca.pem" "accounting_file $ACCT"
gp_start
GPUPOOL_CERT=$T/certs/client.pem GPUPOOL_KEY=$T/certs/client.key hold E 4096
case "$HELD" in READY*) ;; *) fail "a session with a certificate: $HELD" ;; esac
release E || fail "the session with a certificate should end cleanly"
wait_for '.sessions | length == 0' 10
check "$(tail -n 1 "$ACCT")" '.client_cert == "default" and .tenant == "default" and
	.ended == "client_closed"' "the client certificate's name"
gp_stop

# A daemon without an accounting file says so.
gp_config
gp_start
set +e
usage --since 2026-01-01 2>"$T/err"
rc=$?
set -e
[ $rc -eq 1 ] && grep -q "no accounting_file is configured" "$T/err" ||
	fail "usage without records: $(cat "$T/err")"
gp_stop
echo PASS
