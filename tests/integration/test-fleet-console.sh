#!/bin/bash
# The fleet console: poolctl --pool over two daemons' admin endpoints shows totals, one line
# per host and each tenant across hosts; evict and drain address a session or a host; a
# stopped daemon is shown as down (its client gets CUDA_ERROR_DEVICE_UNAVAILABLE), never
# dropped; usage sums both daemons' accounting records, which survive a restart.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fleet.sh"
export GPUPOOL_MEMORY=256M GPUPOOL_CONNECT_TIMEOUT=0 GPUPOOL_PLACEMENT=order
export GPUPOOL_CERT=$T/certs/client.pem GPUPOOL_KEY=$T/certs/client.key

fleet_certs
admin_certs
common=("tls_ca $T/certs/ca.pem" "admin_ca $T/admin/ca.pem" "admin_name ops-rw read-write"
	"drain_grace 1")
fleet_start 2 127.0.0.2:0 2 1G "${common[@]}" "admin_listen 127.0.0.2:0" \
	"accounting_file $T/d2/acct.jsonl"
port=${D2_LISTEN##*:}
A2=$(jq -r .admin_listen "$T/d2/status.json")
aport=${A2##*:}
A3=127.0.0.3:$aport
d3_start() {
	fleet_start 3 "127.0.0.3:$port" 1 512M "${common[@]}" "admin_listen $A3" \
		"accounting_file $T/d3/acct.jsonl"
}
d3_start
export GPUPOOL_ADMIN_POOL=$A2,$A3 # as --pool
fleet() { fpoolctl ops-rw status --json; }

GPUPOOL_SERVER=127.0.0.2:$port hold A 4096
case "$HELD" in READY*) ;; *) fail "A: $HELD" ;; esac
GPUPOOL_SERVER=127.0.0.2:$port hold B 4096
GPUPOOL_SERVER=127.0.0.3:$port hold C 4096
case "$HELD" in READY*) ;; *) fail "C: $HELD" ;; esac
fleet >"$T/f.json"
jq -e '.fleet.hosts == 2 and .fleet.up == 2 and .fleet.gpus == 3 and
	.fleet.memory_total == 2684354560 and .fleet.memory_reserved == 805306368 and
	.fleet.sessions == 3 and .fleet.queued == 0' "$T/f.json" >/dev/null ||
	{ cat "$T/f.json"; fail "fleet totals"; }
jq -e '.tenants == [{"tenant":"default","sessions":3,"queued":0,"gpus":3,
	"memory_reserved":805306368,"memory_used":.tenants[0].memory_used,"hosts":2,
	"busy_1m_seconds":0,"busy_1h_seconds":0,"gpus_busy_1m":0,"gpus_busy_1h":0}]' \
	"$T/f.json" >/dev/null || { cat "$T/f.json"; fail "the tenant across hosts"; }
echo "---- poolctl --pool $GPUPOOL_ADMIN_POOL status ----"
fpoolctl ops-ro status || fail "the fleet table"

# evict a session of one host: HOST/ID.
id=$(jq -r ".hosts[] | select(.endpoint == \"$A2\") | .sessions[0].id" "$T/f.json")
fpoolctl ops-rw evict "$A2/$id" || fail "fleet evict"
dwait 2 '.sessions | length == 1'
if fpoolctl ops-rw evict "$id" 2>"$T/ev.err"; then fail "evict without a host should not guess"; fi
grep -q "HOST/SESSION" "$T/ev.err" || fail "evict without a host: say what it takes"
if fpoolctl ops-rw evict "127.0.0.9:1/$id" 2>"$T/ev.err"; then fail "evict on no such host"; fi
grep -q "127.0.0.9:1 is not a daemon in --pool" "$T/ev.err" || { cat "$T/ev.err"; fail "no such host: say so"; }
# drain a whole host.
fpoolctl ops-rw drain "$A3/" >/dev/null || fail "fleet drain"
dwait 3 'all(.gpus[]; .draining)'
fpoolctl ops-rw undrain "$A3/" >/dev/null || fail "fleet undrain"

# A daemon stopped: shown as down, its client's next call fails as a lost device.
fleet_stop 3
fleet >"$T/down.json"
jq -e ".fleet.hosts == 2 and .fleet.up == 1 and .fleet.down == 1 and .fleet.gpus == 2 and
	(.hosts[] | select(.endpoint == \"$A3\") | .up == false and (.error | length > 0))" \
	"$T/down.json" >/dev/null || { cat "$T/down.json"; fail "a stopped daemon is down, not dropped"; }
fpoolctl ops-ro status >"$T/down.txt"
grep -q "^$A3 *down" "$T/down.txt" || fail "the table shows it down"
echo "---- with $A3 stopped ----"
cat "$T/down.txt"
release C || true
grep -q "CUDA_ERROR_DEVICE_UNAVAILABLE" "$T/C.out" || { cat "$T/C.out" "$T/C.err"; fail "C's client should see the device gone"; }
# usage with a host down: what the others say, and exit 1 naming the one missing.
release A
dwait 2 '.sessions | length == 0'
if fpoolctl ops-ro usage --since 2000-01-01 --json >"$T/u1.json" 2>"$T/u1.err"; then
	fail "usage with a daemon down should exit 1"
fi
grep -q "$A3 is down" "$T/u1.err" || { cat "$T/u1.err"; fail "usage should name the daemon down"; }
jq -e '.total.sessions == 2' "$T/u1.json" >/dev/null || { cat "$T/u1.json"; fail "usage of the daemon up"; }

# Restarted, its records are still there: the fleet's sum is every session.
d3_start
fpoolctl ops-ro usage --since 2000-01-01 --json >"$T/u.json" || fail "fleet usage"
jq -e '.pool_host == "fleet" and .total.sessions == 3 and (.rows | length == 1) and
	.rows[0].key == "default"' "$T/u.json" >/dev/null || { cat "$T/u.json"; fail "usage summed over the fleet"; }
echo "---- poolctl --pool ... usage --since 2000-01-01 ----"
fpoolctl ops-ro usage --since 2000-01-01

# Not an admin endpoint, or no name at all: clear errors.
if fpoolctl ops-ro --pool nosuch.invalid:1 status 2>"$T/bad.err"; then fail "a bad --pool name"; fi
grep -q "nosuch.invalid" "$T/bad.err" || { cat "$T/bad.err"; fail "the bad name should be named"; }

fleet_stop 2
fleet_stop 3
echo PASS
