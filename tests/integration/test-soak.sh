#!/bin/bash
# Soak with chaos: GP_SOAK_CLIENTS loops (4) of clients arriving and leaving (vector_add, or
# hold_session holding a moment) over TLS, plain TCP and the Unix socket as three tenants, for
# GP_SOAK_SECONDS (30, the short mode CI runs; set e.g. 1800 for a long soak), while the test
# in turn, at random moments and on random victims, SIGKILLs a session's worker, SIGKILLs a
# client, reloads the configuration (SIGHUP, warm_workers changed) and drains a GPU (or both,
# briefly) and undrains it.
#
# Every client that was not killed must have passed, or failed with
# CUDA_ERROR_DEVICE_UNAVAILABLE (the interposer's answer once its connection is lost) because
# the test killed its worker. A drain never refuses anyone here: sessions wait (queue_timeout
# is long) and are admitted at the undrain. At the end no session, reservation or worker
# process is left, the supervisor is back to its descriptor count at the start, and every
# accounting record is valid JSON.
. "$(dirname "$0")/lib.sh"
SECS=${GP_SOAK_SECONDS:-30}
LOOPS=${GP_SOAK_CLIENTS:-4}
export SOFTGPU_DEVICES=2 SOFTGPU_MEMORY=2G GPUPOOL_MEMORY=32M
A=aaaaaaaaaaaaaaaaaaaa B=bbbbbbbbbbbbbbbbbbbb
ACCT=$T/usage.jsonl

# conf WARM: the configuration, with WARM warm workers per GPU.
conf() {
	gp_config "listen_unix $T/pool.sock" "listen_plain 127.0.0.1:0" "token $A alice" \
		"token $B bob" "queue_timeout 120" "accounting_file $ACCT" "log_level info" \
		"warm_workers $1"
}
conf 1
gp_start
tls=$GPUPOOL_SERVER
plain=$(jq -r .listen_plain "$T/status.json")
nfds() { ls "/proc/$1/fd" | wc -l; }
wait_for '.warm_workers == 2' 30
fd0=$(nfds "$DAEMON_PID")
mkdir "$T/c"

# client_loop L: clients one after another until $T/stop exists; one line per client in
# $T/results.L: "ID PID KIND SIZE RC".
client_loop() {
	local L=$1 n=0 id kind size srv tok pid rc hold
	while [ ! -e "$T/stop" ]; do
		n=$((n + 1)) id=$L.$n
		case $((RANDOM % 3)) in
		0) srv=$tls tok=$A ;; 1) srv=plain:$plain tok=$B ;; 2) srv=unix:$T/pool.sock tok= ;;
		esac
		# Loop 1 holds its sessions a while, so that the chaos always finds some to hit.
		if [ "$L" != 1 ] && [ $((RANDOM % 2)) = 0 ]; then
			kind=vector_add size=$((1000 + RANDOM % 50000))
			env GPUPOOL_SERVER="$srv" GPUPOOL_TOKEN="$tok" LD_PRELOAD="$CLIENT_PRELOAD" \
				"$CLIENT_ASAN" "$GP_STAGE/bin/vector_add" "$size" \
				>"$T/c/$id.out" 2>&1 &
		else
			kind=hold size=$((4096 + RANDOM % 65536))
			if [ "$L" = 1 ]; then hold="1.$((RANDOM % 10))"; else hold="0.$((RANDOM % 6))"; fi
			{ sleep "$hold"; echo; } |
				env GPUPOOL_SERVER="$srv" GPUPOOL_TOKEN="$tok" \
					LD_PRELOAD="$CLIENT_PRELOAD" "$CLIENT_ASAN" \
					"$GP_TESTBIN/hold_session" "$size" >"$T/c/$id.out" 2>&1 &
		fi
		pid=$!
		rc=0
		wait "$pid" 2>/dev/null || rc=$?
		echo "$id $pid $kind $size $rc" >>"$T/results.$L"
	done
}
# The interposer's warnings and errors go to each client's output: a failure says why.
export GPUPOOL_LOG=warn
loops=()
for L in $(seq 1 "$LOOPS"); do
	client_loop "$L" &
	loops+=($!)
done
# GP_SOAK_KEEP=DIR keeps the test's files (logs, every client's output) there.
trap 'touch "$T/stop"; kill "${loops[@]}" 2>/dev/null || true
	[ -z "${GP_SOAK_KEEP:-}" ] || cp -r "$T" "$GP_SOAK_KEEP"; cleanup' EXIT

# The chaos: one event after another, in turn, 0.3 to 1.2 s apart.
# $T/chaos: "worker WPID CLIENT_PID SESSION", "client PID WPID SESSION", "reload WARM", "drain GPUS", "undrain".
: >"$T/chaos"
drained=
pick_active() { # a random active session's "WORKER_PID CLIENT_PID", or nothing
	status_json >"$T/chaos.json" || fail "poolctl status during the soak"
	jq -r '.sessions[] | "\(.worker_pid) \(.client_pid) \(.state) \(.id)"' "$T/chaos.json" |
		awk '$3 == "active" && $1 > 0 { print $1, $2, $4 }' |
		shuf -n 1
}
end=$(($(date +%s) + SECS))
k=0
while [ "$(date +%s)" -lt "$end" ]; do
	r=$((3 + RANDOM % 10))
	sleep "$((r / 10)).$((r % 10))"
	case $((k % 4)) in
	0)
		v=$(pick_active)
		if [ -n "$v" ]; then
			echo "worker $v" >>"$T/chaos"
			kill -KILL "${v%% *}" 2>/dev/null || true
		fi
		;;
	1)
		v=$(pick_active)
		if [ -n "$v" ]; then
			set -- $v
			echo "client $2 $1 $3" >>"$T/chaos"
			kill -KILL "$2" 2>/dev/null || true
		fi
		;;
	2)
		w=$((RANDOM % 3))
		conf "$w"
		echo "reload $w" >>"$T/chaos"
		kill -HUP "$DAEMON_PID"
		;;
	3)
		if [ -n "$drained" ]; then
			for g in $drained; do
				"$POOLCTL" -s "$T/admin.sock" undrain "$g" >/dev/null || fail "undrain $g"
			done
			echo "undrain $drained" >>"$T/chaos"
			drained=
		else
			# Mostly one GPU (the other takes the sessions), sometimes both (they wait).
			if [ $((RANDOM % 3)) = 0 ]; then drained="0 1"; else drained=$((RANDOM % 2)); fi
			for g in $drained; do
				"$POOLCTL" -s "$T/admin.sock" drain "$g" >/dev/null || fail "drain $g"
			done
			echo "drain $drained" >>"$T/chaos"
		fi
		;;
	esac
	kill -0 "$DAEMON_PID" 2>/dev/null || fail "the daemon died during the soak"
	k=$((k + 1))
done
for g in $drained; do "$POOLCTL" -s "$T/admin.sock" undrain "$g" >/dev/null || fail "undrain"; done
touch "$T/stop"
wait "${loops[@]}"
conf 1
kill -HUP "$DAEMON_PID"

# Nothing left: no session, no reservation, no worker but the warm ones.
wait_for '.sessions | length == 0' 60
wait_for 'all(.gpus[]; .memory_reserved == 0 and .memory_used == 0 and .sessions == 0)' 10
wait_for '.warm_workers == 2' 30
for _ in $(seq 1 100); do
	kids=$(pgrep -P "$DAEMON_PID" | wc -l)
	[ "$kids" -gt 2 ] || break
	sleep 0.1
done
[ "$kids" -le 2 ] || { pgrep -a -P "$DAEMON_PID" >&2; fail "$kids worker processes left, 2 warm"; }
# Nor anywhere else: every process of this build's worker binary started since the daemon
# did is one of the daemon's (warm) children, none left behind, reparented.
wbin=$(readlink -f "$GP_STAGE/libexec/gpupool/gpupool-worker")
dstart=$(awk '{ print $22 }' "/proc/$DAEMON_PID/stat")
kids=$(pgrep -P "$DAEMON_PID" || true)
for p in /proc/[0-9]*; do
	[ "$(readlink "$p/exe" 2>/dev/null)" = "$wbin" ] || continue
	[ "$(awk '{ print $22 }' "$p/stat" 2>/dev/null || echo 0)" -ge "$dstart" ] || continue
	echo "$kids" | grep -qx "${p#/proc/}" ||
		fail "worker ${p#/proc/} is left over: $(tr '\0' ' ' <"$p/cmdline")"
done
for _ in $(seq 1 100); do
	fd1=$(nfds "$DAEMON_PID")
	[ "$fd1" -gt "$fd0" ] || break
	sleep 0.1
done
[ "$fd1" -le "$fd0" ] ||
	{ ls -l "/proc/$DAEMON_PID/fd" >&2; fail "the supervisor holds $fd1 fds, $fd0 at the start"; }

# Every client's result, explained. A kill may come too late (the session ended between the
# status the test read and the kill): that client is judged like any other.
killed_clients=$(awk '$1 == "client" { print $2 }' "$T/chaos")
killed_worker_clients=$(awk '$1 == "worker" { print $3 }' "$T/chaos")
passed=0 lost=0 killed=0 total=0
while read -r id pid kind size rc; do
	total=$((total + 1))
	out=$T/c/$id.out
	if [ "$rc" = 137 ] && echo "$killed_clients" | grep -qx "$pid"; then
		killed=$((killed + 1))
		echo "$pid" >>"$T/clients.killed"
		continue
	fi
	if [ "$rc" = 0 ]; then
		ok=0
		case $kind in
		vector_add) grep -q "^vector_add: $size elements on .*: PASSED" "$out" && ok=1 ;;
		hold) grep -q "^READY $size " "$out" && grep -q "^DONE" "$out" && ok=1 ;;
		esac
		[ $ok = 1 ] || fail "client $id ($kind $size) exited 0 without its result: $(cat "$out")"
		passed=$((passed + 1))
		continue
	fi
	echo "$killed_worker_clients" | grep -qx "$pid" ||
		fail "client $id ($kind $size, pid $pid) exited $rc and no chaos event explains it: $(cat "$out")"
	grep -q "CUDA_ERROR_DEVICE_UNAVAILABLE" "$out" ||
		fail "client $id: its worker was killed, but it says: $(cat "$out")"
	lost=$((lost + 1))
	echo "$pid" >>"$T/workers.killed"
done < <(cat "$T"/results.*)
nworker=$(grep -c '^worker' "$T/chaos") nclient=$(grep -c '^client' "$T/chaos")
echo "soak ${SECS} s, $LOOPS client loops, $k chaos events ($nworker worker kills, $nclient" \
	"client kills, $(grep -c '^reload' "$T/chaos") reloads, $(grep -c '^drain' "$T/chaos")" \
	"drains): $total clients: $passed passed, $lost failed with CUDA_ERROR_DEVICE_UNAVAILABLE" \
	"(worker killed), $killed killed; $((nworker - lost)) worker and $((nclient - killed))" \
	"client kills came after the session had ended"
[ "$passed" -gt 0 ] || fail "no client passed"
[ $((passed + lost + killed)) = "$total" ] || fail "clients unaccounted for"
[ "$lost" -gt 0 ] && [ "$killed" -gt 0 ] || fail "the chaos hit no worker or no client"

# The records: one valid JSON object per line, however the sessions ended; a killed worker's
# session is "killed", a killed client's "client_gone" ("client_closed" if it was killed in
# exit(), after the interposer said goodbye).
jq -e . "$ACCT" >/dev/null || fail "the accounting file holds a line that is not JSON"
# record P WHAT ENDED: the record of the session whose WHAT (worker, client) the test killed
# while client P ran (the session ids the chaos noted: a pid may come back in a long soak).
record() {
	local sids
	sids=$(awk -v p="$1" -v w="$2" '$1 == w && ($1 == "worker" ? $3 : $2) == p { print $4 }' \
		"$T/chaos" | paste -sd, -)
	jq -se --argjson p "$1" --argjson s "[$sids]" --arg e "$3" \
		'map(select(.client_pid == $p and (.session as $x | $s | index($x)))) |
		length == 1 and (.[0].ended | IN($e | split(",")[]))' "$ACCT" >/dev/null ||
		fail "client $1's session (one of $sids) should have ended $3: $(jq -c \
			--argjson p "$1" 'select(.client_pid == $p)' "$ACCT")"
}
for p in $(cat "$T/workers.killed"); do record "$p" worker killed; done
# A client killed in exit(), after the interposer's goodbye, ended its session itself.
for p in $(cat "$T/clients.killed"); do record "$p" client client_gone,client_closed; done
echo "accounting: $(jq -r .ended "$ACCT" | sort | uniq -c | tr -s ' \n' ' ')"
kill -0 "$DAEMON_PID" || fail "the daemon died"
gp_stop
echo PASS
