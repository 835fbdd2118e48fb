#!/bin/bash
# The admin endpoint over TLS (admin_listen): admin_ca's certificates are read-only unless
# admin_name makes them read-write; a tenant's certificate and no certificate get no status;
# a stranger's certificate, an idle connection, too many from one address and a malformed
# frame are turned away while the daemon goes on answering. Refusals are logged once per
# connection and end a connection that is not an admin's; connections that are not admins
# hold at most half the slots; admin_name names only admin_ca's certificates.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fleet.sh"

fleet_certs
admin_certs
fleet_start 2 127.0.0.2:0 2 256M "tls_ca $T/certs/ca.pem" "admin_listen 127.0.0.2:0" \
	"admin_ca $T/admin/ca.pem" "admin_name ops-rw read-write" "handshake_timeout 1" \
	"admin_max_per_address 2" "admin_max_connections 4" "admin_name default read-write" \
	"token quote-token-0123456789 alice"
ADMIN=$(jq -r .admin_listen "$T/d2/status.json")
[ -n "$ADMIN" ] && [ "$ADMIN" != null ] || fail "status should show the admin endpoint"

# read-only: status yes, drain no.
fpoolctl ops-ro --pool "$ADMIN" status --json >"$T/ro.json" || fail "read-only status failed"
jq -e '.fleet.hosts == 1 and .fleet.up == 1 and .fleet.gpus == 2 and .hosts[0].role == "read-only"' \
	"$T/ro.json" >/dev/null || { cat "$T/ro.json"; fail "read-only status"; }
if fpoolctl ops-ro --pool "$ADMIN" drain "$ADMIN/0" 2>"$T/ro.err"; then fail "read-only drained"; fi
grep -q "not allowed for ops-ro (read-only)" "$T/ro.err" || { cat "$T/ro.err"; fail "read-only refusal reason"; }
dstatus 2 | jq -e 'all(.gpus[]; .draining == false)' >/dev/null || fail "a refused drain drained"

# read-write (admin_name): drain and undrain, seen in the daemon's own status.
fpoolctl ops-rw --pool "$ADMIN" drain "$ADMIN/1" || fail "read-write drain failed"
dstatus 2 | jq -e '[.gpus[].draining] == [false, true]' >/dev/null || fail "GPU 1 should drain"
fpoolctl ops-rw --pool "$ADMIN" drain "$ADMIN/" >/dev/null || fail "drain of a whole host failed"
dstatus 2 | jq -e 'all(.gpus[]; .draining)' >/dev/null || fail "every GPU should drain"
fpoolctl ops-rw --pool "$ADMIN" undrain "$ADMIN/" >/dev/null || fail "undrain failed"
dstatus 2 | jq -e 'all(.gpus[]; .draining == false)' >/dev/null || fail "undrain should undrain"

# A tenant's certificate, and none: no status (the host is shown, with the reason).
fpoolctl tenant --pool "$ADMIN" status --json >"$T/tn.json" || fail "fleet status should show a refusal"
jq -e '.fleet.down == 1 and (.hosts[0].error | test("not allowed for default \\(a tenant: quotes only\\)"))' \
	"$T/tn.json" >/dev/null || { cat "$T/tn.json"; fail "a tenant got status"; }
if fpoolctl tenant --pool "$ADMIN" reload 2>"$T/tn.err"; then fail "a tenant reloaded"; fi
# admin_name default read-write names admin_ca's certificates only: the tenant's, from
# tls_ca and named default, stays a tenant.
if fpoolctl tenant --pool "$ADMIN" drain "$ADMIN/" 2>"$T/tn.err"; then fail "a tenant drained"; fi
grep -q "a tenant: quotes only" "$T/tn.err" || { cat "$T/tn.err"; fail "admin_name made a tenant an admin"; }
dstatus 2 | jq -e 'all(.gpus[]; .draining == false)' >/dev/null || fail "a tenant's drain drained"
fpoolctl none --pool "$ADMIN" status --json >"$T/none.json" || fail "fleet status, no certificate"
jq -e '.hosts[0].up == false and (.hosts[0].error | test("quotes with a token only"))' \
	"$T/none.json" >/dev/null || { cat "$T/none.json"; fail "no certificate: status"; }

# Quotes: for the tenant a token names (no certificate), or a tenant's certificate's.
fpoolctl none --pool "$ADMIN" quote --token quote-token-0123456789 --json >"$T/q.json" ||
	{ cat "$T/q.json"; fail "a token quote"; }
jq -e '.[0].tenant == "alice" and .[0].fits and .[0].free_gpus == 2 and
	.[0].unreserved == 536870912 and .[0].draining == false' "$T/q.json" >/dev/null ||
	{ cat "$T/q.json"; fail "the token's quote"; }
if fpoolctl none --pool "$ADMIN" quote --token not-a-known-token-000 --json >"$T/q.json"; then
	fail "an unknown token got a quote"
fi
jq -e '.[0].up == false and (.[0].error | test("the token names no tenant"))' "$T/q.json" \
	>/dev/null || { cat "$T/q.json"; fail "an unknown token: the reason"; }
fpoolctl tenant --pool "$ADMIN" quote --memory 512M --json >"$T/q.json" || fail "a tenant's quote"
jq -e '.[0].tenant == "default" and (.[0].fits | not) and
	(.[0].reason | test("0 GPUs with room"))' "$T/q.json" >/dev/null ||
	{ cat "$T/q.json"; fail "512 MiB does not fit a 256 MiB GPU"; }
fpoolctl ops-rw --pool "$ADMIN" drain "$ADMIN/" >/dev/null || fail "drain for the quote"
fpoolctl tenant --pool "$ADMIN" quote --json >"$T/q.json" || fail "a quote while draining"
jq -e '.[0].draining and (.[0].fits | not)' "$T/q.json" >/dev/null || { cat "$T/q.json"; fail "a draining quote"; }
fpoolctl ops-rw --pool "$ADMIN" undrain "$ADMIN/" >/dev/null || fail "undrain after the quote"
# Compute: with 80% of one GPU granted (and memory to spare on both), a 30% share fits one
# GPU of the two, a 20% one both.
GPUPOOL_SERVER=$D2_LISTEN GPUPOOL_CERT=$T/certs/client.pem GPUPOOL_KEY=$T/certs/client.key \
	GPUPOOL_MEMORY=64M GPUPOOL_COMPUTE=80 hold Q 4096
case "$HELD" in READY*) ;; *) cat "$T/Q.err" >&2; fail "the session holding 80%: $HELD" ;; esac
fpoolctl tenant --pool "$ADMIN" quote --gpus 2 --memory 64M --compute 30 --json >"$T/q.json" ||
	fail "a compute quote"
jq -e '(.[0].fits | not) and .[0].free_gpus == 1 and (.[0].reason | test("memory and compute"))' \
	"$T/q.json" >/dev/null || { cat "$T/q.json"; fail "30% should fit one GPU of two"; }
fpoolctl tenant --pool "$ADMIN" quote --gpus 2 --memory 64M --compute 20% --json >"$T/q.json" ||
	fail "a compute quote"
jq -e '.[0].fits and .[0].free_gpus == 2' "$T/q.json" >/dev/null ||
	{ cat "$T/q.json"; fail "20% should fit both GPUs"; }
release Q || fail "the session holding 80% failed"
if fpoolctl none --pool "$ADMIN" quote --compute 101 2>/dev/null; then fail "a 101% quote"; fi
echo "---- poolctl --pool $ADMIN quote (a tenant's certificate) ----"
fpoolctl tenant --pool "$ADMIN" quote

# A certificate from neither CA: the handshake fails; poolctl says the host is down.
GPUPOOL_TENANT=stranger "$GP_SRC/scripts/gen-certs.sh" "$T/stranger" >/dev/null
"$POOLCTL" --ca "$T/certs/ca.pem" --cert "$T/stranger/client.pem" --key "$T/stranger/client.key" \
	--pool "$ADMIN" status --json >"$T/stranger.json" || true
jq -e '.hosts[0].up == false' "$T/stranger.json" >/dev/null || { cat "$T/stranger.json"; fail "a stranger was answered"; }

# Malformed frames over TLS: that connection closes, nothing else.
head -c 4096 /dev/urandom | timeout 20 openssl s_client -quiet -connect "$ADMIN" \
	-cert "$T/admin/ops-ro.pem" -key "$T/admin/ops-ro.key" -CAfile "$T/certs/ca.pem" \
	>/dev/null 2>&1 || true
# Connections that never start TLS: two are held until handshake_timeout, the third is
# closed at once (admin_max_per_address 2).
host=${ADMIN%:*} port=${ADMIN##*:}
exec {c1}<>"/dev/tcp/$host/$port" {c2}<>"/dev/tcp/$host/$port" {c3}<>"/dev/tcp/$host/$port"
timeout 20 cat <&"$c3" >/dev/null || fail "the third idle connection was not closed"
timeout 20 cat <&"$c1" >/dev/null || fail "an idle connection outlived handshake_timeout"
exec {c1}>&- {c2}>&- {c3}>&-
grep -q "admin_max_per_address connections from there already" "$T/d2/daemon.log" ||
	fail "the log should say why the third was closed"
grep -q "no TLS handshake in handshake_timeout" "$T/d2/daemon.log" ||
	fail "the log should say why idle ones were closed"
grep -q "admin endpoint: 127.0.0.1:[0-9]*: TLS" "$T/d2/daemon.log" ||
	fail "the log should name the malformed connection"
fpoolctl ops-ro --pool "$ADMIN" status --json | jq -e '.fleet.up == 1' >/dev/null ||
	fail "the daemon should still answer"

# Refusals. 20,000 pipelined status requests without a certificate: one answer, one log
# line, the connection closed.
port=${ADMIN##*:}
peer() { timeout 60 python3 "$GP_SRC/tests/integration/admin_peer.py" "$port" "$@"; }
refusals() { grep -c "admin endpoint: .*: refused: " "$T/d2/daemon.log"; }
before=$(refusals)
out=$(peer flood none 20000 status)
[ "$out" = "answers 1 refused 1 closed True" ] || fail "pipelined refusals, no certificate: $out"
[ "$(refusals)" -eq $((before + 1)) ] || fail "$(($(refusals) - before)) log lines for one connection's refusals"
# A read-only admin asking 2,000 drains: each answered, the connection kept, one line logged
# and the rest counted when it closes.
before=$(refusals)
out=$(peer flood "$T/admin/ops-ro" 2000 drain)
[ "$out" = "answers 2000 refused 2000 closed False" ] || fail "pipelined refusals, read-only: $out"
wait_log() { for _ in $(seq 50); do grep -q "$1" "$T/d2/daemon.log" && return 0; sleep 0.1; done; return 1; }
wait_log "1999 more requests refused, not logged" || fail "the refusals not logged should be counted"
[ "$(refusals)" -eq $((before + 1)) ] || fail "$(($(refusals) - before)) log lines for 2000 refused drains"
# A wrong token: refused, and the connection ends (no second guess on it).
out=$(peer token not-a-known-token-000)
[ "$out" = "answers refused closed True" ] || fail "a wrong token: $out"
out=$(peer token quote-token-0123456789)
[ "$out" = "answers ok,ok closed False" ] || fail "a right token: $out"
# Four connections without a certificate from two addresses, then two that never start TLS:
# only two of the four are kept (half of admin_max_connections 4), and an admin is answered.
out=$(peer crowd "$T/admin/ops-ro")
[ "$out" = "held 2 admin ok" ] || fail "connections that are not admins crowding the slots: $out"
grep -q "the slots for connections that are not admins are taken" "$T/d2/daemon.log" ||
	fail "the log should say why the crowd was closed"

fleet_stop 2
echo PASS
