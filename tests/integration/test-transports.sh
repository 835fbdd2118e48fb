#!/bin/bash
# Besides TLS on `listen`: a Unix socket for clients on this host (the kernel names the
# user, who becomes the tenant) and, only when configured, plain TCP (a token required).
# Neither side falls back to the other: a TLS client does not talk plain, nor a plain
# client TLS.
. "$(dirname "$0")/lib.sh"

sock=$T/client.sock
gp_config "listen_unix $sock" "listen_plain 127.0.0.1:0" "token 0123456789abcdef0123 bob"
gp_start
tls=$GPUPOOL_SERVER
status_json >"$T/s.json"
[ "$(jq -r .listen_unix "$T/s.json")" = "$sock" ] || fail "status should show the Unix socket"
plain=$(jq -r .listen_plain "$T/s.json")
case "$plain" in 127.0.0.1:[1-9]*) ;; *) fail "status should show the plain address: $plain" ;; esac
[ "$(stat -c %a "$sock")" = 666 ] || fail "without listen_unix_group the socket is for everyone"
grep -q "listening without TLS on $plain" "$T/daemon.log" || fail "plain TCP must be logged as such"

# The Unix socket: the user is the tenant, and the session shows who connected.
me=$(id -un)
out=$(GPUPOOL_SERVER=unix:$sock GPUPOOL_LOG=info run_client "$GP_STAGE/bin/vector_add" 5000 2>&1) ||
	fail "vector_add over the Unix socket: $out"
echo "$out"
case "$out" in *"on unix:$sock"*"tenant $me"*PASSED*) ;; *) fail "unix: $out" ;; esac
GPUPOOL_SERVER=unix:$sock hold A 1048576
status_json >"$T/s.json"
jq -e --arg me "$me" '.sessions[0] | .tenant == $me and (.client | startswith("local:uid="))' \
	"$T/s.json" >/dev/null || fail "the local session: $(jq -c .sessions "$T/s.json")"
release A

# Plain TCP proves no identity: a session needs a known token there.
set +e
out=$(GPUPOOL_SERVER=plain:$plain GPUPOOL_LOG=error run_client "$GP_STAGE/bin/vector_add" 100 2>&1)
rc=$?
set -e
[ $rc -ne 0 ] || fail "a session without a token ran over plain TCP"
case "$out" in *"refused the session"*"needs a token"*) ;; *) fail "plain without a token: $out" ;; esac
out=$(GPUPOOL_SERVER=plain:$plain GPUPOOL_TOKEN=0123456789abcdef0123 GPUPOOL_LOG=info \
	run_client "$GP_STAGE/bin/vector_add" 5000 2>&1) || fail "plain with a token: $out"
case "$out" in *"tenant bob"*PASSED*) ;; *) fail "plain with a token: $out" ;; esac

# No downgrade either way.
set +e
out=$(GPUPOOL_SERVER=$plain GPUPOOL_LOG=error run_client "$GP_STAGE/bin/vector_add" 100 2>&1)
rc=$?
set -e
[ $rc -ne 0 ] || fail "a TLS client ran on the plain port"
# Told at once, not taken for a busy pool and tried again until the connect timeout.
case "$out" in *"without TLS? then name it plain:"*"CUDA_ERROR_NO_DEVICE"*) ;;
*) fail "TLS client on the plain port: $out" ;; esac
set +e
out=$(GPUPOOL_SERVER=plain:$tls GPUPOOL_LOG=error run_client "$GP_STAGE/bin/vector_add" 100 2>&1)
rc=$?
set -e
[ $rc -ne 0 ] || fail "a plain client ran on the TLS port"
case "$out" in *"speaks TLS"*"CUDA_ERROR_NO_DEVICE"*) ;; *) fail "plain client on the TLS port: $out" ;; esac
# A socket path nobody listens on.
set +e
out=$(GPUPOOL_SERVER=unix:$T/none.sock GPUPOOL_LOG=error run_client "$GP_STAGE/bin/vector_add" 100 2>&1)
set -e
case "$out" in *"pool unreachable"*"none.sock"*) ;; *) fail "missing socket: $out" ;; esac

# A reload does not move a bound socket: the change waits for a restart, and says so.
sed -i "s|^listen_unix .*|listen_unix $T/moved.sock|" "$T/gpupoold.conf"
"$POOLCTL" -s "$T/admin.sock" reload >/dev/null || fail "reload"
grep -q "listen_unix(_group).*take effect at restart" "$T/daemon.log" || fail "reload should warn"
[ "$(status_json | jq -r .listen_unix)" = "$sock" ] || fail "the socket moved on reload"
out=$(GPUPOOL_SERVER=unix:$sock run_client "$GP_STAGE/bin/vector_add" 100 2>&1) ||
	fail "the socket after a reload: $out"

wait_for '.sessions | length == 0' 10
gp_stop
[ ! -e "$sock" ] || fail "the Unix socket should go with the daemon"

# With listen_unix_group the socket is that group's only (mode 0660).
grp=$(id -gn)
gp_config "listen_unix $sock" "listen_unix_group $grp"
gp_start
[ "$(stat -c '%a %G' "$sock")" = "660 $grp" ] ||
	fail "listen_unix_group: the socket is $(stat -c '%a %G' "$sock")"
out=$(GPUPOOL_SERVER=unix:$sock run_client "$GP_STAGE/bin/vector_add" 100 2>&1) ||
	fail "a member of the group: $out"
gp_stop

# A file that is not a socket is never removed to make room for one.
echo keep >"$T/file"
sed -e "s|^listen_unix .*|listen_unix $T/file|" "$T/gpupoold.conf" >"$T/bad.conf"
if timeout 20 "$GP_STAGE/bin/gpupoold" -f "$T/bad.conf" 2>"$T/bad.log"; then
	fail "gpupoold started with listen_unix on a regular file"
fi
grep -q "exists and is not a socket" "$T/bad.log" || fail "should say why: $(cat "$T/bad.log")"
[ "$(cat "$T/file")" = keep ] || fail "the file was touched"
echo PASS
