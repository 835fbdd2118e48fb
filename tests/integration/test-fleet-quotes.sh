#!/bin/bash
# Quotes: a client whose GPUPOOL_SERVER resolves to several daemons asks each for a quote
# (its tenant certificate, at the admin endpoint) and connects where GPUPOOL_PLACEMENT says:
# spread to the most room, binpack to the least that fits; a best candidate that then turns
# the connection away falls back to the next. Observed through the fleet poolctl --json.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fleet.sh"
export GPUPOOL_MEMORY=256M GPUPOOL_CONNECT_TIMEOUT=0 GPUPOOL_LOG=debug
export GPUPOOL_CERT=$T/certs/client.pem GPUPOOL_KEY=$T/certs/client.key

fleet_certs pool.test
admin_certs
dns_start
common=("tls_ca $T/certs/ca.pem" "admin_ca $T/admin/ca.pem")
fleet_start 2 127.0.0.2:0 2 1G "${common[@]}" "admin_listen 127.0.0.2:0"
port=${D2_LISTEN##*:}
aport=$(jq -r .admin_listen "$T/d2/status.json")
aport=${aport##*:}
fleet_start 3 "127.0.0.3:$port" 1 1G "${common[@]}" "admin_listen 127.0.0.3:$aport"
fleet_start 4 "127.0.0.4:$port" 1 512M "${common[@]}" "admin_listen 127.0.0.4:$aport"
export GPUPOOL_QUOTE_PORT=$aport GPUPOOL_SERVER=pool.test:$port
POOL=127.0.0.2:$aport,127.0.0.3:$aport,127.0.0.4:$aport
zone "pool.test A 127.0.0.2" "pool.test A 127.0.0.3" "pool.test A 127.0.0.4"
fleet() { fpoolctl ops-ro --pool "$POOL" status --json; }
on() { # on HOST: sessions on the daemon at 127.0.0.HOST
	fleet | jq "[.hosts[] | select(.endpoint | startswith(\"127.0.0.$1:\")) | .sessions[]] | length"
}

# spread: three sessions, each where the most room is: three GPUs, one session each.
export GPUPOOL_PLACEMENT=spread
for c in A B C; do
	hold "$c" 4096
	case "$HELD" in READY*) ;; *) fail "spread $c: $HELD" ;; esac
done
fleet >"$T/spread.json"
jq -e '.fleet.sessions == 3 and ([.hosts[].gpus[].sessions] | max == 1)' "$T/spread.json" \
	>/dev/null || { cat "$T/spread.json"; fail "spread: one session per GPU"; }
jq -e '[.hosts[] | select(.endpoint | startswith("127.0.0.4:")) | .sessions[]] | length == 0' \
	"$T/spread.json" >/dev/null || fail "spread: the smallest GPU should be left for last"
grep -q "quote from 127.0.0.4:$aport: fits" "$T/C.err" || { cat "$T/C.err"; fail "the quotes should be in the log"; }
for c in A B C; do release "$c"; done
for h in 2 3 4; do dwait "$h" '.sessions | length == 0'; done

# binpack: the least room that fits: the 512 MiB GPU takes two, then a 1 GiB one.
export GPUPOOL_PLACEMENT=binpack
for c in D E F; do
	hold "$c" 4096
	case "$HELD" in READY*) ;; *) fail "binpack $c: $HELD" ;; esac
done
[ "$(on 4)" = 2 ] || { fleet; fail "binpack: two sessions should fill 127.0.0.4"; }
fleet | jq -e '.fleet.sessions == 3 and .fleet.memory_reserved == 805306368 and
	(.tenants | length == 1 and .[0].tenant == "default" and .[0].sessions == 3 and .[0].hosts == 2)' \
	>/dev/null || { fleet; fail "binpack: fleet totals and the tenant across hosts"; }
for c in D E F; do release "$c"; done
for h in 2 3 4; do dwait "$h" '.sessions | length == 0'; done

# A race lost: 127.0.0.5 quotes best (binpack: its GPU is the smallest) but takes no
# sessions at the port the name gives; the client goes on to the next best, 127.0.0.4.
fleet_start 5 127.0.0.5:0 1 300M "${common[@]}" "admin_listen 127.0.0.5:$aport"
zone "pool.test A 127.0.0.5" "pool.test A 127.0.0.2" "pool.test A 127.0.0.3" "pool.test A 127.0.0.4"
hold G 4096
case "$HELD" in READY*) ;; *) fail "fallback: $HELD" ;; esac
grep -q "pool unreachable: cannot connect to 127.0.0.5:$port" "$T/G.err" || { cat "$T/G.err"; fail "the best candidate should have been tried first"; }
[ "$(on 4)" = 1 ] || { fleet; fail "fallback: the next best is 127.0.0.4"; }
release G

# A race lost at admission: 127.0.0.3 is full (a session holds its whole GPU), so its
# quote says the session would wait; 127.0.0.6 has no admin endpoint (no quote). The
# client tries 127.0.0.3 first all the same (waiting ranks before unknown) but asks it not
# to queue (Hello no_wait, as every candidate but the last): it refuses, and the session
# goes to 127.0.0.6 instead of waiting.
fleet_stop 5
fleet_start 6 "127.0.0.6:$port" 1 1G "tls_ca $T/certs/ca.pem"
GPUPOOL_SERVER=127.0.0.3:$port GPUPOOL_MEMORY=1G hold FULL 4096
case "$HELD" in READY*) ;; *) fail "filling 127.0.0.3: $HELD" ;; esac
zone "pool.test A 127.0.0.3" "pool.test A 127.0.0.6"
hold I 4096
case "$HELD" in READY*) ;; *) fail "no_wait fallback: $HELD" ;; esac
grep -q "quote from 127.0.0.3:$aport: does not fit" "$T/I.err" || { cat "$T/I.err"; fail "127.0.0.3 should quote that it does not fit"; }
grep -q "pool 127.0.0.3:$port refused the session: no room for this session now (the client has other pools to try)" "$T/I.err" ||
	{ cat "$T/I.err"; fail "127.0.0.3 should refuse rather than queue"; }
dwait 6 '.sessions | length == 1'
dwait 3 '.sessions | length == 1'
release I
release FULL

# More than four candidates: two of them, drawn at random, are asked (the power of two
# choices), whatever the others would say.
zone "pool.test A 127.0.0.2" "pool.test A 127.0.0.3" "pool.test A 127.0.0.4" \
	"pool.test A 127.0.0.6" "pool.test A 127.0.0.7"
hold J 4096
case "$HELD" in READY*) ;; *) fail "five candidates: $HELD" ;; esac
[ "$(grep -c "quote from 127.0.0" "$T/J.err")" = 2 ] || { cat "$T/J.err"; fail "two quotes of five candidates"; }
release J

# A candidate whose admin endpoint sends a byte a second (a TLS record that never ends):
# its quote gives up at its 2 s deadline, not per byte, and the session goes to the other
# candidate. The 60 s only catch a hang; the time is not judged otherwise.
"$GP_TESTBIN/drip" "127.0.0.7:$aport" &
DRIP_PID=$!
FLEET_PIDS="$FLEET_PIDS $DRIP_PID"
zone "pool.test A 127.0.0.7" "pool.test A 127.0.0.2"
hold_start K 4096
hold_line K 60
case "$HELD" in READY*) ;; *)
	kill -KILL "$K_PID" 2>/dev/null
	fail "a dripping quote should not hold cuInit: $HELD" ;;
esac
grep -q "quote from 127.0.0.7:$aport: TLS connect: timed out" "$T/K.err" ||
	{ cat "$T/K.err"; fail "the dripping candidate's quote should time out"; }
# The quotes are asked at once: 127.0.0.2's, asked after 127.0.0.7's in DNS order, is
# answered while 127.0.0.7's still waits for its deadline (asked one after another, the
# timeout came first, and each silent candidate added its deadline to cuInit).
first=$(grep -n "quote from 127.0.0.2:$aport: fits" "$T/K.err" | head -n 1 | cut -d: -f1)
late=$(grep -n "quote from 127.0.0.7:$aport: TLS connect: timed out" "$T/K.err" | head -n 1 | cut -d: -f1)
[ -n "$first" ] && [ "$first" -lt "$late" ] ||
	{ cat "$T/K.err"; fail "127.0.0.2's quote should be answered before 127.0.0.7's times out"; }
dwait 2 '.sessions | length == 1'
release K
kill -KILL "$DRIP_PID"
wait "$DRIP_PID" 2>/dev/null || true

# The same past the handshake: the answer's frame announces 100 bytes and sends one a
# second; and an answer announcing more than a quote can be is refused at its header.
for len in 100 1048576; do
	"$GP_TESTBIN/drip" "127.0.0.7:$aport" "$T/certs/server.pem" "$T/certs/server.key" "$len" &
	DRIP_PID=$!
	FLEET_PIDS="$FLEET_PIDS $DRIP_PID"
	for _ in $(seq 1 100); do # until it listens
		(exec 3<>"/dev/tcp/127.0.0.7/$aport") 2>/dev/null && break
		sleep 0.05
	done
	hold_start L 4096
	hold_line L 60
	case "$HELD" in READY*) ;; *)
		kill -KILL "$L_PID" 2>/dev/null
		fail "a quote answer of $len bytes dripping should not hold cuInit: $HELD" ;;
	esac
	case $len in
	100) want="quote from 127.0.0.7:$aport: read: timed out" ;;
	*) want="quote from 127.0.0.7:$aport: a 1048576-byte message where at most 8192 were expected" ;;
	esac
	grep -q "$want" "$T/L.err" || { cat "$T/L.err"; fail "the dripping answer: $want"; }
	dwait 2 '.sessions | length == 1'
	release L
	kill -KILL "$DRIP_PID"
	wait "$DRIP_PID" 2>/dev/null || true
done

# A bad placement name is an error that names it.
GPUPOOL_PLACEMENT=scatter hold H 4096
case "$HELD" in ERROR*) ;; *) fail "a bad GPUPOOL_PLACEMENT should fail cuInit: $HELD" ;; esac
grep -q "GPUPOOL_PLACEMENT=scatter: expected spread, binpack or order" "$T/H.err" || fail "its reason"

for h in 2 3 4 6; do fleet_stop "$h"; done
echo PASS
