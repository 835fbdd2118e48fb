#!/bin/bash
# test-bench-short.sh GPUPOOL_BENCH -- runs `gpupool-bench --short --json` once, so that the
# benchmark cannot rot: the JSON must parse and hold every key docs/performance.md names,
# each a number (or null where a measurement could not be taken: openssl missing). The
# numbers themselves are never judged.
set -euo pipefail
bench=$1
out=$(mktemp /tmp/gpupool-bench-test.XXXXXX)
trap 'rm -f "$out"' EXIT
"$bench" --short --json >"$out"
python3 - "$out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
keys = """tls_rtt_p50_us tls_rtt_p99_us tcp_rtt_p50_us unix_rtt_p50_us
tls_up_mib_s tls_down_mib_s tcp_up_mib_s tcp_down_mib_s unix_up_mib_s unix_down_mib_s
openssl_aes_gcm_mib_s direct_launch_per_s direct_setup_ms direct_htod_mib_s direct_dtoh_mib_s
rtt_p50_us rtt_p99_us rtt_ratio rtt_tcp_ratio rtt_unix_ratio
launch_per_s launch_ratio launch_tcp_ratio launch_unix_ratio
htod_tls_1_mib_s dtoh_tls_1_mib_s htod_tcp_4_mib_s dtoh_unix_4_mib_s
htod_tls_ratio dtoh_tls_ratio htod_tcp_ratio dtoh_tcp_ratio htod_unix_ratio dtoh_unix_ratio
setup_ms hide_0us_rtts hide_200us_rtts hide_2000us_rtts
hide_200us_rtt_p50_us hide_2000us_batch_p50_us
graph_pool_s graph_direct_s graph_ratio
sessions_1_launch_per_s sessions_4_launch_per_s sessions_16_launch_per_s
sessions_1_direct_launch_per_s sessions_16_ratio""".split()
missing = [k for k in keys if k not in d]
if missing:
    sys.exit("gpupool-bench --json lacks " + ", ".join(missing))
nullable = {"openssl_aes_gcm_mib_s"}
bad = [k for k in keys if not (isinstance(d[k], (int, float)) or (d[k] is None and k in nullable))]
if bad:
    sys.exit("gpupool-bench --json has no number for " + ", ".join(bad))
if d["short"] is not True:
    sys.exit("gpupool-bench --short did not say it was short")
print("gpupool-bench --short --json: %d keys, all present" % len(d))
PY
