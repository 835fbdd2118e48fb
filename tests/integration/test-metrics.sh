#!/bin/bash
# The Prometheus endpoint reports the same pool poolctl does, in the text format.
. "$(dirname "$0")/lib.sh"

gp_config "metrics_listen 127.0.0.1:0"
gp_start
url=$(grep -o "http://[0-9.:]*/metrics" "$T/daemon.log" | head -n 1)
[ -n "$url" ] || fail "the daemon should log where its metrics are"
hold A 2097152
# 2 MiB allocated and its context's 9 MiB (softgpu's default heap and printf buffer).
curl -sf "$url" >"$T/metrics" || fail "GET $url"
grep -q '^gpupool_up 1$' "$T/metrics" || fail "gpupool_up"
grep -q '^# TYPE gpupool_session_calls_total counter$' "$T/metrics" || fail "TYPE lines"
grep -q '^gpupool_gpu_memory_used_bytes{gpu="0",name="softgpu"} 11534336$' "$T/metrics" ||
	fail "GPU memory in use: $(grep gpu_memory_used "$T/metrics")"
grep -q '^gpupool_sessions{state="active"} 1$' "$T/metrics" || fail "one active session"
grep -q '^gpupool_session_memory_used_bytes{session="[0-9]*",tenant="default",program="hold_session"} 11534336$' \
	"$T/metrics" || fail "session memory: $(grep session_memory_used "$T/metrics")"
release A
wait_for '.sessions | length == 0' 10
curl -sf "$url" | grep -q '^gpupool_sessions{state="active"} 0$' || fail "no session after release"

# Silent peers are cut off after 5 s and cannot hold the endpoint: past 16 at once,
# more are closed on arrival.
hostport=${url#http://}
hostport=${hostport%/metrics}
for i in $(seq 20); do
	exec {fd}<>"/dev/tcp/${hostport%:*}/${hostport##*:}"
	fds+=("$fd")
done
# Past the 16th, closed on arrival: long before the 5 s a silent peer is given.
for fd in "${fds[@]:16}"; do
	timeout 2 cat <&"$fd" >/dev/null || fail "a metrics connection past 16 was kept"
done
for fd in "${fds[@]}"; do
	# Each read ends in EOF (closed by the daemon), never in read's own timeout.
	timeout 15 cat <&"$fd" >/dev/null || fail "a silent metrics connection was not closed"
	exec {fd}>&-
done
curl -sf "$url" | grep -q '^gpupool_up 1$' || fail "metrics after silent peers"
gp_stop
echo PASS
