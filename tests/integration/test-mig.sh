#!/bin/bash
# MIG instances as placement targets, on softgpu's MIG emulation (SOFTGPU_MIG): the inventory
# lists the GPU in MIG mode and its instances (through softgpu's NVML) and they agree with what
# CUDA reports inside a session; two sessions land on the two instances, each seeing only its
# instance's memory and SMs; the GPU itself takes no session; GPUPOOL_SLICE names a profile or
# minimums and is placed on a match, refused (clearly) when none matches, and refused by the
# client itself when malformed; poolctl status nests the instances under their GPU with their
# sessions, in the table and in --json.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=1 SOFTGPU_MEMORY=8G SOFTGPU_SMS=70 SOFTGPU_MIG="0:1g.2gb,2g.4gb"
G=$((2 << 30))

# softgpu alone, per instance: what CUDA reports there, to hold the pool's inventory to.
on_softgpu "$GP_TESTBIN/hold_session" 4096 --sms </dev/null >"$T/direct0.out" ||
	fail "softgpu with SOFTGPU_MIG: $(cat "$T/direct0.out")"
case "$(cat "$T/direct0.out")" in
READY*" total $G uuid "*" sms 10"*) ;;
*) fail "softgpu should show the first instance (2 GiB, 10 SMs): $(cat "$T/direct0.out")" ;;
esac

gp_config "placement spread" "queue_timeout 30" "metrics_listen 127.0.0.1:0"
gp_start
assert_status '.nvml != null' "the inventory should have found softgpu's NVML"
assert_status '[.gpus[] | select(.mig)] | length == 1' "one GPU in MIG mode"
assert_status '[.gpus[] | select(.instance)] | length == 2' "its two instances"
assert_status '(.gpus[] | select(.mig)) as $p | $p.instances == [.gpus[] | select(.instance and .parent == $p.index) | .index]' \
	"the GPU's instances, nested under it"
assert_status '[.gpus[] | select(.instance) | [.profile, .memory_total, .sms, .gpu_instance, .nvml]] == [["1g.2gb", 2147483648, 10, 1, "match"], ["2g.4gb", 4294967296, 20, 2, "match"]]' \
	"each instance's profile, memory, SMs, NVML ids as NVML lists them"
assert_status '[.gpus[] | select(.instance) | .uuid] | unique | length == 2' "two UUIDs"
direct=$(sed -n 's/.*uuid GPU-\([0-9a-f-]*\).*/\1/p' "$T/direct0.out")
assert_status "(.gpus[] | select(.index == 128) | .uuid) == \"MIG-$direct\"" \
	"instance 128 should be the one softgpu's CUDA shows first, by UUID"
grep -q "MIG instance 1g.2gb of GPU 64, 2048 MiB, 10 SMs" "$T/daemon.log" ||
	fail "the inventory should log each instance"
url=$(grep -o "http://[0-9.:]*/metrics" "$T/daemon.log" | head -n 1)
curl -sf "$url" >"$T/metrics" || fail "GET $url"
grep -q '^gpupool_gpu_mig_instance{gpu="129",parent="64",profile="2g.4gb",sms="20"} 1$' \
	"$T/metrics" || fail "metrics: $(grep mig "$T/metrics")"
grep -q '^gpupool_gpu_memory_total_bytes{gpu="128",name="softgpu MIG 1g.2gb"} 2147483648$' "$T/metrics" ||
	fail "metrics: instance 128's memory: $(grep memory_total "$T/metrics")"
# Each byte once: the instances' memory, not the GPU's as well (its own family has that).
total=$(awk '/^gpupool_gpu_memory_total_bytes[{]/ { s += $NF } END { printf "%.0f", s }' "$T/metrics")
[ "$total" = $((3 * G)) ] || fail "metrics: GPU memory summed should be the instances' 6 GiB, not $total: $(grep memory_total "$T/metrics")"
grep -q '^gpupool_gpu_memory_total_bytes{gpu="64",' "$T/metrics" &&
	fail "metrics: the GPU in MIG mode should have no memory_total series of its own"
grep -q '^gpupool_gpu_mig_memory_total_bytes{gpu="64",name="[^"]*"} 8589934592$' "$T/metrics" ||
	fail "metrics: the GPU in MIG mode's whole memory: $(grep mig_memory "$T/metrics")"
grep -q '^gpupool_gpu_draining{gpu="64",' "$T/metrics" ||
	fail "metrics: the GPU in MIG mode keeps its draining series"
# and the scrape still lints clean where promtool is (test-metrics-promtool.sh finds it so).
PROMTOOL=${PROMTOOL:-$(command -v promtool || echo "${GP_PROMTOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpupool}/promtool")}
if "$PROMTOOL" --version >/dev/null 2>&1; then
	"$PROMTOOL" check metrics <"$T/metrics" >"$T/promtool.out" 2>&1 || true
	if grep -v '^DCGM_FI_[A-Z_]* ' "$T/promtool.out" | grep -q .; then
		fail "promtool check metrics on a MIG host: $(cat "$T/promtool.out")"
	fi
fi

# Two sessions without a slice, each a whole target: one per instance, each sees only its own.
hold A 4096 --sms
case "$HELD" in READY*) ;; *) fail "first session: $HELD" ;; esac
hold B 4096 --sms
case "$HELD" in READY*) ;; *) fail "second session: $HELD" ;; esac
assert_status '[.sessions[].gpus[0]] | sort == [128, 129]' "spread: one session per instance"
assert_status '(.gpus[] | select(.mig)) | [.sessions, .memory_reserved] == [0, 0]' \
	"the GPU in MIG mode takes no session itself"
assert_status '[.gpus[] | select(.instance) | .session_ids | length] == [1, 1]' \
	"each instance lists its session"
# What CUDA reports in each session is its instance's, as the inventory has it.
for s in A B; do
	out=$(head -n 1 "$T/$s.out")
	idx=$(jq -r --arg s "$(sed -n 's/.*uuid GPU-\([0-9a-f-]*\).*/\1/p' <<<"$out")" \
		'.gpus[] | select(.instance and .uuid == ("MIG-" + $s)) | .index' "$T/status.json")
	[ -n "$idx" ] || fail "session $s's device UUID is no instance of the pool: $out"
	want=$(jq -r --argjson i "$idx" '.gpus[] | select(.index == $i) | "total \(.memory_total) uuid .* sms \(.sms)"' "$T/status.json")
	grep -Eq "$want" <<<"$out" || fail "session $s on instance $idx: CUDA says '$out', the inventory '$want'"
done
grep -q "READY.* total $G .* sms 10" "$T/A.out" "$T/B.out" || fail "a session should see 2 GiB, 10 SMs"
grep -q "READY.* total $((4 << 30)) .* sms 20" "$T/A.out" "$T/B.out" ||
	fail "a session should see 4 GiB, 20 SMs"
grep -q "placed on devices MIG-" "$T/daemon.log" ||
	fail "the worker should be placed by the instance's MIG- UUID"
"$POOLCTL" -s "$T/admin.sock" status | tee "$T/status.txt"
grep -Eq '^64 +softgpu \(MIG\)' "$T/status.txt" || fail "poolctl should show the GPU in MIG mode"
grep -Eq '^ 128 +\\_ MIG 1g.2gb, 10 SMs .* sessions [0-9]+$' "$T/status.txt" ||
	fail "poolctl should nest instance 128 and its session under the GPU"
grep -Eq '^ 129 +\\_ MIG 2g.4gb, 20 SMs .* sessions [0-9]+$' "$T/status.txt" ||
	fail "poolctl should nest instance 129 and its session under the GPU"
# Both instances are taken whole: a third session waits, though the GPU's own 8 GiB are not
# reserved (the GPU is no target in MIG mode).
hold_start C 4096
wait_for '.sessions | map(select(.state == "queued")) | length == 1' 10
assert_status '.sessions[] | select(.state == "queued") | .waiting_for == "capacity"' \
	"a third session should wait for an instance"
a_total=$(sed -n 's/.* total \([0-9]*\) .*/\1/p' "$T/A.out")
release A
hold_line C
case "$HELD" in READY*" total $a_total "*) ;; *) fail "the waiter should get A's instance ($a_total bytes): $HELD" ;; esac
release B
release C
wait_for '.sessions | length == 0'
gp_stop

# Slices: by profile, by minimums; none matching is refused with the pool's instances named.
gp_config "placement binpack" "default_memory 512M"
gp_start
GPUPOOL_SLICE=2g.4gb hold P 4096 --sms
case "$HELD" in READY*" sms 20") ;; *) fail "GPUPOOL_SLICE=2g.4gb should give the 2g.4gb instance: $HELD" ;; esac
assert_status '.sessions[0] | [.gpus, .slice_requested, .memory_limit] == [[129], "2g.4gb", 536870912]' \
	"the slice's session on instance 129, its limit default_memory"
GPUPOOL_SLICE="mem>=3G" hold M 4096 --sms
case "$HELD" in READY*" sms 20") ;; *) fail "mem>=3G should give the 4 GiB instance: $HELD" ;; esac
GPUPOOL_SLICE="sms>=5,mem>=1G" hold S 4096 --sms
case "$HELD" in READY*) ;; *) fail "sms>=5,mem>=1G: $HELD" ;; esac
# Both instances match the last: binpack takes 128, which has less room left (2 GiB to 3 GiB).
assert_status '[.sessions[].gpus[0]] | sort == [128, 129, 129]' \
	"binpack: the instance with the least room that fits, for each"
# A compute share on an instance is a share of the instance: 50% of its 20 SMs.
GPUPOOL_SLICE=2g.4gb GPUPOOL_COMPUTE=50% hold H 4096 --sms
case "$HELD" in READY*" sms 10") ;; *) fail "50% of the 2g.4gb instance should be 10 SMs: $HELD" ;; esac
assert_status '(.gpus[] | select(.index == 129)) | [.compute_reserved, .sessions] == [50, 3]' \
	"the share is granted on the instance"
release H
# A session without a slice still goes by memory, on instances alike.
hold N 4096
case "$HELD" in READY*) ;; *) fail "a session without a slice: $HELD" ;; esac
for s in P M S N; do release $s; done
out=$(GPUPOOL_LOG=error GPUPOOL_SLICE=3g.20gb run_client "$GP_TESTBIN/hold_session" 4096 </dev/null 2>&1) &&
	fail "a slice no instance matches was admitted: $out"
grep -q "refused the session: asked for 1 MIG instance matching the slice; 0 match (the pool's instances: 1g.2gb (2048 MiB, 10 SMs), 2g.4gb (4096 MiB, 20 SMs))" <<<"$out" ||
	fail "the refusal should say why and name the instances: $out"
out=$(GPUPOOL_LOG=error GPUPOOL_SLICE="sms>=40" run_client "$GP_TESTBIN/hold_session" 4096 </dev/null 2>&1) &&
	fail "sms>=40 was admitted: $out"
grep -q "matching the slice; 0 match" <<<"$out" || fail "sms>=40: $out"
# Malformed: the client refuses before it asks any pool.
for bad in "1g" "mem>=" "mem>=8Q" "sms>=-1" "gpu>=1" "mem>=1G,mem>=2G" "8g.10gb"; do
	out=$(GPUPOOL_LOG=error GPUPOOL_SLICE=$bad run_client "$GP_TESTBIN/hold_session" 4096 </dev/null 2>&1) &&
		fail "GPUPOOL_SLICE=$bad was taken: $out"
	case "$out" in *"GPUPOOL_SLICE=$bad: "*"expected a MIG profile"*"ERROR cuInit(0) CUDA_ERROR_INVALID_VALUE"*) ;;
	*) fail "GPUPOOL_SLICE=$bad should be refused by the client, clearly: $out" ;; esac
done
# A client that skips the interposer's check: the daemon parses the slice itself, refuses it
# with the reason, and logs it escaped (a newline in it starts no line of the log).
out=$(RAW_SLICE=$'mem>=1G,bogus\nFAKE log line' "$GP_TESTBIN/raw_client" hold </dev/null 2>&1) &&
	fail "a malformed slice sent raw was admitted: $out"
grep -q "a minimum is mem>=SIZE or sms>=N" <<<"$out" || fail "the daemon's refusal: $out"
grep -q "^FAKE" "$T/daemon.log" && fail "the slice's newline reached the log unescaped"
assert_status '.sessions | map(select(.state == "active")) | length == 0' "nothing admitted"
wait_for '.sessions | length == 0'
gp_stop
echo PASS
