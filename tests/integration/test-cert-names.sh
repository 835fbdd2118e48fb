#!/bin/bash
# A client certificate whose subject has two common names is refused with the reason
# (which CN is the tenant would be ambiguous); with tenant_from san-uri the tenant is the
# certificate's subjectAltName URI instead of its CN.
. "$(dirname "$0")/lib.sh"

"$GP_SRC/scripts/gen-certs.sh" "$T/certs" >/dev/null
# issue NAME SUBJECT [EXTENSIONS]: a client certificate from the test CA.
issue() {
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/certs/$1.key" \
		-out "$T/certs/$1.csr" -subj "$2" 2>/dev/null
	printf 'extendedKeyUsage=clientAuth\n%s\n' "${3:-}" >"$T/certs/$1.ext"
	openssl x509 -req -in "$T/certs/$1.csr" -CA "$T/certs/ca.pem" -CAkey "$T/certs/ca.key" \
		-CAcreateserial -days 2 -out "$T/certs/$1.pem" -extfile "$T/certs/$1.ext" 2>/dev/null
}
issue twocn "/CN=alice/CN=admin"
issue spiffe "/CN=mallory" "subjectAltName=URI:spiffe://pool/carol"

gp_config "tls_ca $T/certs/ca.pem"
gp_start
set +e
out=$(GPUPOOL_LOG=error GPUPOOL_CERT=$T/certs/twocn.pem GPUPOOL_KEY=$T/certs/twocn.key \
	run_client "$GP_STAGE/bin/vector_add" 1000 2>&1)
rc=$?
set -e
[ $rc -ne 0 ] || fail "a certificate with two CNs was let in: $out"
case "$out" in *"more than one commonName"*) ;; *) fail "the client should be told why: $out" ;; esac
grep -q "refused: the certificate's subject has more than one commonName" "$T/daemon.log" ||
	fail "the refusal should give the reason"
gp_stop

gp_config "tls_ca $T/certs/ca.pem" "tenant_from san-uri"
gp_start
GPUPOOL_CERT=$T/certs/spiffe.pem GPUPOOL_KEY=$T/certs/spiffe.key hold H 4096
case "$HELD" in READY*) ;; *) fail "hold_session with a SAN URI: $HELD" ;; esac
assert_status '.sessions[0].tenant == "spiffe://pool/carol"' "the tenant should be the SAN URI"
release H || fail "hold_session failed"
gp_stop
echo PASS
