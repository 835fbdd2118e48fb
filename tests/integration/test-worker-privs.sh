#!/bin/bash
# A worker runs a tenant's calls, so before the first of them it gives up what it does not
# need: it sets no_new_privs (no setuid or file-capability exec gains anything, and the
# supervisor knows its processes by it), and once TLS is done it keeps no copy of the pool's
# private key: neither the key file's text nor its private number is in its memory (read
# through /proc/PID/mem, as root or a ptracer can).
. "$(dirname "$0")/lib.sh"

gp_config
gp_start
hold H 4096
case "$HELD" in READY*) ;; *) fail "hold_session: $HELD" ;; esac
status_json >"$T/status.json"
wpid=$(jq -r '.sessions[0].worker_pid' "$T/status.json")
[ -n "$wpid" ] && [ "$wpid" != null ] && [ -d "/proc/$wpid" ] || fail "no worker pid: $wpid"
grep -q '^NoNewPrivs:[[:space:]]*1' "/proc/$wpid/status" ||
	fail "the worker should run with no_new_privs: $(grep NoNewPrivs "/proc/$wpid/status")"
if [ -n "${GP_SAN_RUNTIME:-}" ]; then
	# Known (docs/security.md): OpenSSL's key decoder frees copies of the key's text and
	# number without wiping them; ASan's quarantine keeps freed memory unreused, so they
	# are found there for the whole session. Not checked in the sanitizer builds.
	echo "SKIP (key part): freed memory is never reused under AddressSanitizer"
elif [ "$(id -u)" -eq 0 ]; then
	# In hex: the key file's base64 lines, and its private scalar as stored (big-endian,
	# and little-endian as a BIGNUM's words hold it on x86-64 and arm64).
	grep -v '^-----' "$T/certs/server.key" | while read -r l; do
		printf %s "$l" | od -An -v -tx1 | tr -d ' \n'
		echo
	done >"$T/key.lines"
	priv=$(openssl pkey -in "$T/certs/server.key" -noout -text |
		sed -n '/^priv:/,/^pub:/p' | grep -v -e '^priv:' -e '^pub:' | tr -d ' :\n')
	[ ${#priv} -eq 66 ] && priv=${priv#00}
	[ ${#priv} -eq 64 ] || fail "cannot read the key's private scalar: $priv"
	echo "$priv" >>"$T/key.lines"
	echo "$priv" | fold -w2 | tac | tr -d '\n' >>"$T/key.lines"
	echo >>"$T/key.lines"
	set +e
	env "$CLIENT_ASAN" "$GP_TESTBIN/memgrep" "$wpid" "$T/key.lines" >"$T/memgrep.out" 2>&1
	rc=$?
	set -e
	cat "$T/memgrep.out"
	case $rc in
	0) ;;
	3) fail "the worker still holds the TLS private key after the handshake" ;;
	*) echo "SKIP (key part): the worker's memory cannot be read here" ;;
	esac
else
	echo "SKIP (key part): needs root to read the worker's memory"
fi
release H || fail "hold_session failed"
gp_stop
echo PASS
