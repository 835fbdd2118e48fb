#!/bin/bash
# The supervisor names the tenant itself, never from the worker's word (docs/security.md
# "The supervisor names the tenant"). Over mutual TLS two tenants' sessions are named by
# their certificates, a client whose key does not match its certificate is refused with the
# reason, and a Unix-socket session is the connecting user's. Then the worker is replaced by
# forge_worker, which rewrites its AdmitRequest as a compromised worker could: claiming
# another tenant with the client's own proof, claiming one with no proof, or replaying the
# proof of an earlier session. Each is refused, logged as a compromised worker, and no
# session of the claimed tenant appears. Clients that answer the challenge wrongly
# (proof_client) are told why.
. "$(dirname "$0")/lib.sh"

GPUPOOL_TENANT=alice "$GP_SRC/scripts/gen-certs.sh" "$T/certs" >/dev/null
C=$T/certs
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$C/bob.key" \
	-out "$C/bob.csr" -subj "/CN=bob" 2>/dev/null
printf 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n' >"$C/bob.ext"
openssl x509 -req -in "$C/bob.csr" -CA "$C/ca.pem" -CAkey "$C/ca.key" -CAcreateserial \
	-days 2 -out "$C/bob.pem" -extfile "$C/bob.ext" 2>/dev/null
ALICE="GPUPOOL_CERT=$C/client.pem GPUPOOL_KEY=$C/client.key"
BOB="GPUPOOL_CERT=$C/bob.pem GPUPOOL_KEY=$C/bob.key"
SOCK=$T/pool.sock
me=$(id -un)

# ---- honest workers ----
gp_config "tls_ca $C/ca.pem" "listen_unix $SOCK" "default_memory 64M" "handshake_timeout 3"
gp_start
eval "$ALICE" hold_start A 4096
eval "$BOB" hold_start B 4096
hold_line A
case "$HELD" in READY*) ;; *) fail "alice's session: $HELD" ;; esac
hold_line B
case "$HELD" in READY*) ;; *) fail "bob's session: $HELD" ;; esac
GPUPOOL_SERVER=unix:$SOCK hold U 4096
case "$HELD" in READY*) ;; *) fail "the Unix-socket session: $HELD" ;; esac
assert_status '[.sessions[].tenant] | sort == (["alice", "bob", "'"$me"'"] | sort)' \
	"the tenants should be alice, bob (their certificates) and $me (the socket's user)"
release A || fail "alice's session failed"
release B || fail "bob's session failed"
release U || fail "the Unix-socket session failed"
grep -q "compromised" "$T/daemon.log" && fail "an honest worker was taken to be compromised"

# Clients that answer the challenge wrongly (proof_client): each is told why, and the pool
# goes on.
pc() { "$GP_TESTBIN/proof_client" "$1" "$C/client.pem" "$C/client.key" "$C/bob.key"; }
expect() { # MODE PATTERN
	local out
	out=$(pc "$1") || fail "proof_client $1 could not run: $out"
	case "$out" in $2) ;; *) fail "proof_client $1: $out" ;; esac
}
expect old 'status -*its interposer is older than the pool*'
expect garbage 'status -*signature does not verify*'
expect otherkey 'status -*signature does not verify*'
expect wrongtype 'status -*expected TENANT_PROOF after the challenge*'
expect silent 'closed: *'
grep -q "no TENANT_PROOF: none within the deadline" "$T/daemon.log" ||
	fail "a client that never answers should be closed at the deadline"
expect good 'status 0: *(tenant alice)'
expect twice 'status 0: *(tenant alice)'
wait_for '.sessions | length == 0'
grep -q "closing: .* in TENANT_PROOF" "$T/daemon.log" ||
	fail "a proof after admission should end that session as a protocol error"
grep -q "compromised" "$T/daemon.log" && fail "a client's bad proof was blamed on its worker"

# A key that is not the certificate's: refused before anything is sent, with the reason.
set +e
out=$(GPUPOOL_LOG=error GPUPOOL_CERT=$C/bob.pem GPUPOOL_KEY=$C/client.key \
	run_client "$GP_STAGE/bin/vector_add" 100 2>&1)
rc=$?
set -e
[ $rc -ne 0 ] || fail "a client whose key is not its certificate's was let in"
case "$out" in *"does not match certificate"*) ;; *) fail "the client should say why: $out" ;; esac
assert_status '.sessions | length == 0' "no session should be left"
gp_stop
: >"$T/daemon.log"

# ---- forged AdmitRequests ----
# forge_worker relays the real worker; warm workers are started apart and are not relayed.
export GPUPOOL_TEST_WORKER=$GP_STAGE/libexec/gpupool/gpupool-worker
gp_config "tls_ca $C/ca.pem" "listen_unix $SOCK" "warm_workers 0" \
	"worker $GP_TESTBIN/forge_worker"

# forged MODE WHO CLIENT-ENV...: a session whose worker forges MODE must be refused, logged
# as a compromised worker (WHO: what the log says the credentials name), and leave no session.
forged() {
	local mode=$1 who=$2 out rc
	shift 2
	GPUPOOL_TEST_FORGE=$mode gp_start
	local srv=$GPUPOOL_SERVER
	[ -z "${FORGE_PLAIN:-}" ] || srv=plain:$(status_json | jq -r .listen_plain)
	set +e
	out=$(env GPUPOOL_LOG=error GPUPOOL_SERVER="$srv" "$@" LD_PRELOAD="$CLIENT_PRELOAD" \
		"$CLIENT_ASAN" "$GP_STAGE/bin/vector_add" 100 2>&1)
	rc=$?
	set -e
	[ $rc -ne 0 ] || fail "$mode: the forged tenant was let in: $out"
	grep -q "forge_worker: " "$T/daemon.log" || fail "$mode: forge_worker did not run"
	grep -q "$who" "$T/daemon.log" || fail "$mode: the refusal should say why ($who)"
	wait_for '.sessions | length == 0'
	grep -q "admitted" "$T/daemon.log" && fail "$mode: a session was admitted"
	gp_stop
	: >"$T/daemon.log"
}
forged tenant=alice 'claims tenant "alice", but its credentials name "bob".*compromised' $BOB
forged tenant=alice "claims tenant \"alice\", but its credentials name \"$me\".*compromised" \
	GPUPOOL_SERVER=unix:$SOCK
forged bare=alice "refused: no client certificate was forwarded" $BOB
# Refused, then asking again with the real proof: the second request ends the session.
forged retry "control channel: unexpected message type; ending the session" $BOB

# Over plain TCP only a token names the tenant: a worker that names one itself is lying.
gp_config "listen_plain 127.0.0.1:0" "token 0123456789abcdef0123 bob" "warm_workers 0" \
	"worker $GP_TESTBIN/forge_worker"
FORGE_PLAIN=1 forged tenant=alice "claims tenant \"alice\", but its session's credentials name no tenant" \
	GPUPOOL_TOKEN=0123456789abcdef0123
gp_config "tls_ca $C/ca.pem" "listen_unix $SOCK" "warm_workers 0" \
	"worker $GP_TESTBIN/forge_worker"

# A proof alice's client made for one session, replayed by bob's worker in another.
GPUPOOL_TEST_FORGE=save=$T/alice.proof gp_start
eval "$ALICE" hold A 4096
case "$HELD" in READY*) ;; *) fail "alice's session under save: $HELD" ;; esac
assert_status '.sessions[0].tenant == "alice"' "an unchanged proof should name alice"
release A || fail "alice's session failed"
gp_stop
[ -s "$T/alice.proof" ] || fail "no proof was saved"
: >"$T/daemon.log"
forged replay=$T/alice.proof "refused: the tenant proof's signature does not verify" $BOB
echo PASS
