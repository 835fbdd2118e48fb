#!/bin/bash
# The systemd unit, installed, passes `systemd-analyze verify` (syntax, directives, and that
# its commands exist), and the installed example configuration passes `gpupoold -n`.
. "$(dirname "$0")/lib.sh"
: "${GP_BUILD:?}"

if ! command -v systemd-analyze >/dev/null; then
	echo "SKIP: no systemd-analyze"
	exit 0
fi
cmake --install "$GP_BUILD" --prefix "$T/prefix" >/dev/null
unit=$T/prefix/lib/systemd/system/gpupoold.service
# The unit names the configured prefix; point it at this install.
prefix=$(sed -n 's|^ExecStart=\(.*\)/bin/gpupoold .*|\1|p' "$unit")
sed -i "s|$prefix/|$T/prefix/|g" "$unit"
systemd-analyze verify "$unit" || fail "systemd-analyze verify $unit"
grep -q '^Type=notify' "$unit" || fail "the unit should be Type=notify"
grep -q '^DeviceAllow=char-nvidia-frontend rw' "$unit" || fail "the unit should allow the GPUs"
# The daemon's cgroup is delegated to it, and writable: each worker gets one under it.
grep -q '^Delegate=yes' "$unit" || fail "the unit should delegate its cgroup (Delegate=yes)"
! grep -q '^ProtectControlGroups=yes' "$unit" || fail "ProtectControlGroups=yes would make the delegated cgroup read-only"

# The shipped example configuration is valid once its files exist.
"$GP_SRC/scripts/gen-certs.sh" "$T/certs" >/dev/null
sed -e "s|/etc/gpupool/server.pem|$T/certs/server.pem|" \
	-e "s|/etc/gpupool/server.key|$T/certs/server.key|" \
	"$T/prefix/share/gpupool/gpupoold.conf.example" >"$T/example.conf"
out=$("$T/prefix/bin/gpupoold" -n -f "$T/example.conf") || fail "gpupoold -n: $out"
[ "$out" = "configuration OK" ] || fail "gpupoold -n said: $out"
echo "bogus_key 1" >>"$T/example.conf"
set +e
out=$("$T/prefix/bin/gpupoold" -n -f "$T/example.conf" 2>&1)
rc=$?
set -e
[ $rc -ne 0 ] || fail "gpupoold -n accepted a bad file"
case "$out" in *"example.conf:"*"unknown key 'bogus_key'"*) ;; *) fail "gpupoold -n: $out" ;; esac
echo PASS
