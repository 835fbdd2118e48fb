#!/bin/bash
# With tls_ca set, clients must present a certificate the CA signed, and the
# certificate's common name is the session's tenant.
. "$(dirname "$0")/lib.sh"

GPUPOOL_TENANT=alice "$GP_SRC/scripts/gen-certs.sh" "$T/certs" >/dev/null
gp_config "tls_ca $T/certs/ca.pem"
gp_start

set +e
out=$(GPUPOOL_LOG=error run_client "$GP_STAGE/bin/vector_add" 1000 2>&1)
rc=$?
set -e
[ $rc -ne 0 ] || fail "a client without a certificate was let in"
echo "$out" | head -3

GPUPOOL_CERT=$T/certs/client.pem GPUPOOL_KEY=$T/certs/client.key hold H 4096
case "$HELD" in READY*) ;; *) fail "hold_session with a certificate: $HELD" ;; esac
assert_status '.sessions[0].tenant == "alice"' "the tenant should be the certificate's CN"
release H || fail "hold_session failed"
gp_stop
echo PASS
