#!/bin/bash
# Discovery: GPUPOOL_SERVER as a name with several A records, and as srv:NAME with
# priorities and ports (RFC 2782); names that do not resolve fail cuInit, naming the name.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fleet.sh"
export GPUPOOL_MEMORY=64M GPUPOOL_CONNECT_TIMEOUT=0

fleet_certs pool.test h2.pool.test h3.pool.test
dns_start
fleet_start 2 127.0.0.2:0 1 256M
port=${D2_LISTEN##*:}
fleet_start 3 "127.0.0.3:$port" 1 256M
fleet_start 4 127.0.0.4:0 1 256M # its own port: only SRV can say it
port4=${D4_LISTEN##*:}

# A name with an address where nothing listens first: the next address serves.
zone "pool.test A 127.0.0.9" "pool.test A 127.0.0.3" "pool.test A 127.0.0.2"
GPUPOOL_SERVER=pool.test:$port hold A 4096
case "$HELD" in READY*) ;; *) fail "pool.test: $HELD" ;; esac
dwait 3 '.sessions | length == 1'
dstatus 2 | jq -e '.sessions | length == 0' >/dev/null || fail "the session should be on 127.0.0.3"
release A

# SRV: the lower priority first, at the port the record gives.
zone "_gpupool._tcp.pool.test SRV 10 5 $port4 h3.pool.test" \
	"_gpupool._tcp.pool.test SRV 20 5 $port h2.pool.test" \
	"h3.pool.test A 127.0.0.4" "h2.pool.test A 127.0.0.2"
GPUPOOL_SERVER=srv:_gpupool._tcp.pool.test hold B 4096
case "$HELD" in READY*) ;; *) fail "srv: $HELD" ;; esac
dwait 4 '.sessions | length == 1'
release B

# The first priority's host is gone: the next priority serves.
fleet_stop 4
GPUPOOL_SERVER=srv:_gpupool._tcp.pool.test hold C 4096
case "$HELD" in READY*) ;; *) fail "srv, first target down: $HELD" ;; esac
dwait 2 '.sessions | length == 1'
release C

# SRV with many targets whose A/AAAA questions go unanswered (dnsd DROP), after one that
# resolves: resolution stops at its time budget (docs/operations.md: 10 s) rather than
# asking after every target, and the session goes to the one that resolved. The 60 s
# only catch a hang; the time is not judged otherwise.
lines=("_gpupool._tcp.slow.pool.test SRV 5 5 $port h2.pool.test" "h2.pool.test A 127.0.0.2")
for i in $(seq 1 64); do
	lines+=("_gpupool._tcp.slow.pool.test SRV 10 5 $port t$i.slow.pool.test" "t$i.slow.pool.test DROP")
done
zone "${lines[@]}"
GPUPOOL_LOG=warn GPUPOOL_SERVER=srv:_gpupool._tcp.slow.pool.test hold_start S 4096
hold_line S 60
case "$HELD" in READY*) ;; *)
	kill -KILL "$S_PID" 2>/dev/null
	fail "SRV targets that do not answer should not hold cuInit: $HELD" ;;
esac
grep -q "SRV targets from .* on not tried" "$T/S.err" || { cat "$T/S.err"; fail "the targets left should be logged"; }
dwait 2 '.sessions | length == 1'
release S

# Addresses in the SRV answer's additional section are taken without a question of their
# own (the A question for h3.pool.test would go unanswered).
zone "* ADDITIONAL" "_gpupool._tcp.glue.pool.test SRV 10 5 $port h3.pool.test" \
	"h3.pool.test A 127.0.0.3" "h3.pool.test DROP"
GPUPOOL_SERVER=srv:_gpupool._tcp.glue.pool.test hold_start U 4096
hold_line U 60
case "$HELD" in READY*) ;; *)
	kill -KILL "$U_PID" 2>/dev/null
	fail "SRV with additional records: $HELD" ;;
esac
dwait 3 '.sessions | length == 1'
release U

# Names that do not resolve: cuInit fails and says which name.
export GPUPOOL_LOG=error
GPUPOOL_SERVER=nosuch.pool.test:$port hold D 4096
case "$HELD" in ERROR*cuInit*) ;; *) fail "an unknown name should fail cuInit: $HELD" ;; esac
grep -q "nosuch.pool.test A: no such name (NXDOMAIN)" "$T/D.err" || { cat "$T/D.err"; fail "the error should name the name"; }
GPUPOOL_SERVER=srv:_gpupool._tcp.nosrv.pool.test hold E 4096
case "$HELD" in ERROR*) ;; *) fail "an unknown SRV name should fail: $HELD" ;; esac
grep -q "_gpupool._tcp.nosrv.pool.test SRV: no such name" "$T/E.err" || { cat "$T/E.err"; fail "the SRV error should name the name"; }
zone "pool.test A 127.0.0.9"
GPUPOOL_SERVER=pool.test:$port hold F 4096
case "$HELD" in ERROR*) ;; *) fail "an unreachable candidate should fail: $HELD" ;; esac
grep -q "pool unreachable: cannot connect to 127.0.0.9:$port: .* (pool.test:$port)" "$T/F.err" || { cat "$T/F.err"; fail "the error should name the pool"; }
echo "nameserver ::1" >"$T/bad-resolv.conf"
GPUPOOL_RESOLV_CONF=$T/bad-resolv.conf GPUPOOL_SERVER=pool.test:$port hold G 4096
grep -q "bad-resolv.conf:1: IPv6 nameserver" "$T/G.err" || { cat "$T/G.err"; fail "a bad resolv.conf should say its line"; }

fleet_stop 2
fleet_stop 3
echo PASS
