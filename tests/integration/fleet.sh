# fleet.sh -- several daemons in one test, each on its own loopback address (all of 127/8 is
# loopback on Linux), and a DNS responder the test controls (dnsd.c). Sourced after lib.sh.
#
# The resolver is pointed at the responder through GPUPOOL_RESOLV_CONF (src/resolve.c):
# a resolv.conf the test writes, with the responder's port. Nothing else about
# resolution changes, and no real DNS server is asked.

FLEET_PIDS=
DNSD_PID=
ZONE=$T/zone

fleet_cleanup() {
	for p in $FLEET_PIDS $DNSD_PID; do
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	cleanup
}
trap fleet_cleanup EXIT

# fleet_certs NAME...: the CA, and a server certificate that also names 127.0.0.2-5 and NAMEs.
fleet_certs() {
	"$GP_SRC/scripts/gen-certs.sh" "$T/certs" 127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5 "$@" >/dev/null
	export GPUPOOL_CA="$T/certs/ca.pem"
}

# dns_start: starts the responder on 127.0.0.1 and writes $T/resolv.conf for it.
dns_start() {
	: >"$ZONE"
	"$GP_TESTBIN/dnsd" "$ZONE" "$T/dns.port" &
	DNSD_PID=$!
	for _ in $(seq 1 100); do
		[ -s "$T/dns.port" ] && break
		sleep 0.05
	done
	[ -s "$T/dns.port" ] || fail "dnsd did not start"
	echo "nameserver 127.0.0.1:$(cat "$T/dns.port")" >"$T/resolv.conf"
	export GPUPOOL_RESOLV_CONF="$T/resolv.conf"
}

# zone LINE...: replaces the zone (dnsd reads it for each question).
zone() {
	printf '%s\n' "$@" >"$ZONE.new"
	mv "$ZONE.new" "$ZONE"
}

# fleet_start N ADDR:PORT DEVICES MEMORY [config lines...]: daemon N, with its own
# directory $T/dN and admin socket; its pid in D<N>_PID, its bound address in D<N>_LISTEN.
fleet_start() {
	local n=$1 listen=$2 devices=$3 memory=$4 dir=$T/d$1
	shift 4
	mkdir -p "$dir"
	{
		echo "listen $listen"
		echo "tls_cert $T/certs/server.pem"
		echo "tls_key $T/certs/server.key"
		echo "driver $GP_SOFTGPU"
		echo "admin_socket $dir/admin.sock"
		echo "log_level debug"
		for line in "$@"; do echo "$line"; done
	} >"$dir/gpupoold.conf"
	SOFTGPU_DEVICES=$devices SOFTGPU_MEMORY=$memory \
		"$GP_STAGE/bin/gpupoold" -f "$dir/gpupoold.conf" 2>>"$dir/daemon.log" &
	eval "D${n}_PID=$!"
	FLEET_PIDS="$FLEET_PIDS $!"
	for _ in $(seq 1 200); do
		if "$POOLCTL" -s "$dir/admin.sock" status --json >"$dir/status.json" 2>/dev/null; then
			eval "D${n}_LISTEN=$(jq -r .listen "$dir/status.json")"
			return 0
		fi
		kill -0 "$!" 2>/dev/null || { cat "$dir/daemon.log" >&2; fail "daemon $n exited at start"; }
		sleep 0.1
	done
	fail "daemon $n did not answer on its admin socket"
}

# fleet_stop N: SIGTERM and wait; it must exit 0.
fleet_stop() {
	local pid
	eval "pid=\$D${1}_PID"
	kill -TERM "$pid"
	wait "$pid" || fail "daemon $1 did not exit cleanly"
}

# dstatus N: daemon N's own status (its local admin socket), JSON.
dstatus() {
	"$POOLCTL" -s "$T/d$1/admin.sock" status --json
}

# dwait N JQ_EXPR: until daemon N's status satisfies JQ_EXPR (10 s of tries).
dwait() {
	for _ in $(seq 1 200); do
		dstatus "$1" >"$T/d$1/status.json" 2>/dev/null &&
			jq -e "$2" "$T/d$1/status.json" >/dev/null && return 0
		sleep 0.05
	done
	cat "$T/d$1/status.json" >&2
	fail "daemon $1: timed out waiting for: $2"
}

# admin_certs: a separate admin CA in $T/admin (admin_ca) with two certificates,
# ops-ro.pem and ops-rw.pem (keys beside them).
admin_certs() {
	GPUPOOL_TENANT=ops-ro "$GP_SRC/scripts/gen-certs.sh" "$T/admin" >/dev/null
	mv "$T/admin/client.pem" "$T/admin/ops-ro.pem"
	mv "$T/admin/client.key" "$T/admin/ops-ro.key"
	(
		cd "$T/admin"
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ops-rw.key \
			-out ops-rw.csr -subj "/CN=ops-rw" 2>/dev/null
		printf 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n' >ext
		openssl x509 -req -in ops-rw.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
			-days 30 -out ops-rw.pem -extfile ext 2>/dev/null
	)
}

# fpoolctl WHO ARGS...: poolctl over --pool with certificate WHO ($T/admin/WHO.pem, or
# "tenant" for the tenants' client certificate, or "none").
fpoolctl() {
	local who=$1
	shift
	case "$who" in
	none) "$POOLCTL" --ca "$T/certs/ca.pem" "$@" ;;
	tenant) "$POOLCTL" --ca "$T/certs/ca.pem" --cert "$T/certs/client.pem" \
		--key "$T/certs/client.key" "$@" ;;
	*) "$POOLCTL" --ca "$T/certs/ca.pem" --cert "$T/admin/$who.pem" \
		--key "$T/admin/$who.key" "$@" ;;
	esac
}
