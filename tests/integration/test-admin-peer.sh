#!/bin/bash
# The admin socket checks who connects (SO_PEERCRED), not only the socket file's mode:
# root, the daemon's own user and admin_group are allowed. A process of another user whose
# group merely owns the socket is refused, and so is a process of the daemon's own user that
# carries no_new_privs, the mark every worker sets before its tenant's first call (a worker,
# or anything it forks, could otherwise drive the pool). Each refusal is logged and says why.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: needs root to run poolctl as other users"
	exit 0
fi
if grep -q '^NoNewPrivs:[[:space:]]*1' /proc/self/status; then
	echo "SKIP: this test itself runs with no_new_privs"
	exit 0
fi
chmod 0711 "$T" # others may reach the socket; its own mode decides the rest

# A worker-like process: the daemon's user (root here), with no_new_privs.
gp_config
gp_start
set +e
setpriv --no-new-privs "$POOLCTL" -s "$T/admin.sock" status >"$T/nnp.out" 2>&1
rc=$?
set -e
cat "$T/nnp.out"
[ "$rc" -ne 0 ] || fail "a process with no_new_privs (as a worker) used the admin socket"
grep -q "admin socket refused: it runs with no_new_privs" "$T/nnp.out" ||
	fail "the refusal should say why"
grep -q "admin socket: refused uid 0 .*no_new_privs" "$T/daemon.log" ||
	fail "the refusal should be logged"
"$POOLCTL" -s "$T/admin.sock" status >/dev/null || fail "root should still be allowed"

# Another user in the socket's group (no admin_group: the daemon's group, root's here).
sgid=$(stat -c %g "$T/admin.sock")
set +e
setpriv --reuid=nobody --regid="$sgid" --clear-groups "$POOLCTL" -s "$T/admin.sock" status \
	>"$T/nobody.out" 2>&1
rc=$?
set -e
cat "$T/nobody.out"
[ "$rc" -ne 0 ] || fail "nobody in the socket's group used the admin socket"
grep -q "admin socket refused: only root and uid 0 may use it" "$T/nobody.out" ||
	fail "the refusal should say who may"
grep -q "admin socket: refused uid $(id -u nobody) " "$T/daemon.log" ||
	fail "the refusal should be logged"
gp_stop

# admin_group lets its members in, by a supplementary group too.
grp=gptest$$
if ! groupadd "$grp" 2>/dev/null; then
	echo "PASS (admin_group part skipped: cannot create a group)"
	exit 0
fi
trap 'groupdel "$grp" 2>/dev/null || true; cleanup' EXIT
gid=$(getent group "$grp" | cut -d: -f3)
gp_config "admin_group $grp"
gp_start
[ "$(stat -c %G "$T/admin.sock")" = "$grp" ] || fail "the socket should be group $grp"
setpriv --reuid=nobody --regid=nogroup --groups="$gid" "$POOLCTL" -s "$T/admin.sock" status \
	>/dev/null || fail "a member of admin_group should be allowed"
set +e
setpriv --reuid=nobody --regid="$gid" --clear-groups --no-new-privs "$POOLCTL" \
	-s "$T/admin.sock" status >"$T/nnp2.out" 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "admin_group with no_new_privs should still be refused"
gp_stop
echo PASS
