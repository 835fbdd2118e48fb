#!/bin/bash
# Unix sockets (listen_unix, admin_socket) only in a directory other users cannot change:
# in one they could write, the socket could be swapped for a symlink between bind() and
# giving it its group, and the daemon would change the group of the link's target. Such a
# directory is refused at start with a clear reason; a sticky one (like /tmp) is fine; the
# group goes to the socket, never through a link.
. "$(dirname "$0")/lib.sh"

mkdir -m 0777 "$T/open"
chmod 0777 "$T/open" # whatever the umask
gp_config "listen_unix $T/open/c.sock"
set +e
"$GP_STAGE/bin/gpupoold" -f "$T/gpupoold.conf" 2>"$T/refused.log" &
pid=$!
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
	kill -KILL "$pid"
	fail "gpupoold started with its socket in a world-writable directory"
fi
wait "$pid"
rc=$?
set -e
cat "$T/refused.log"
[ "$rc" -ne 0 ] || fail "gpupoold should exit non-zero"
grep -q "can be changed by other users" "$T/refused.log" || fail "the reason should be logged"
[ ! -e "$T/open/c.sock" ] || fail "no socket should be left there"

# Sticky and world-writable, as /tmp: other users cannot remove or rename our socket.
mkdir -m 1777 "$T/sticky"
chmod 1777 "$T/sticky"
grp=$(id -gn)
gp_config "listen_unix $T/sticky/c.sock" "listen_unix_group $grp"
gp_start
[ -S "$T/sticky/c.sock" ] || fail "the socket should be there"
[ "$(stat -c %G "$T/sticky/c.sock")" = "$grp" ] || fail "the socket should be group $grp"
gp_stop
echo PASS
