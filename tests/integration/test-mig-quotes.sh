#!/bin/bash
# Quotes over MIG instances: a GPU in MIG mode counts by its instances, never whole; with a
# slice (poolctl quote --slice, as the client's GPUPOOL_SLICE) only matching instances count;
# a malformed slice is named in the reason. The fleet's status counts instances, not their GPU.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fleet.sh"
export SOFTGPU_SMS=70 SOFTGPU_MIG="0:1g.2gb,2g.4gb"

fleet_certs
admin_certs
fleet_start 2 127.0.0.2:0 1 8G "tls_ca $T/certs/ca.pem" "admin_ca $T/admin/ca.pem" \
	"admin_listen 127.0.0.2:0"
aport=$(jq -r .admin_listen "$T/d2/status.json")
POOL=127.0.0.2:${aport##*:}
quote() { fpoolctl tenant --pool "$POOL" quote "$@" --json | jq '.[0]'; }

quote >"$T/q.json"
jq -e '[.fits, .free_gpus, .unreserved] == [true, 2, 6442450944]' "$T/q.json" >/dev/null ||
	{ cat "$T/q.json"; fail "no slice: the two instances (6 GiB), not the GPU's 8 GiB"; }
quote --slice 2g.4gb >"$T/q.json"
jq -e '[.fits, .free_gpus, .unreserved, .room_max] == [true, 1, 4294967296, 4294967296]' \
	"$T/q.json" >/dev/null || { cat "$T/q.json"; fail "2g.4gb: the one instance"; }
quote --slice "mem>=1G" >"$T/q.json"
jq -e '[.fits, .free_gpus] == [true, 2]' "$T/q.json" >/dev/null ||
	{ cat "$T/q.json"; fail "mem>=1G: both instances"; }
# A process enumerates one MIG instance: two are no session's, with a slice or without.
quote --slice "mem>=1G" --gpus 2 >"$T/q.json"
jq -e '.fits == false and (.reason | test("a session uses one"))' "$T/q.json" >/dev/null ||
	{ cat "$T/q.json"; fail "mem>=1G --gpus 2: one instance a session"; }
quote --gpus 2 >"$T/q.json"
jq -e '.fits == false and (.reason | test("at most one MIG instance"))' "$T/q.json" >/dev/null ||
	{ cat "$T/q.json"; fail "--gpus 2 on two instances: one instance a session"; }
quote --slice 3g.20gb >"$T/q.json"
jq -e '[.fits, .free_gpus, .draining] == [false, 0, false]' "$T/q.json" >/dev/null ||
	{ cat "$T/q.json"; fail "3g.20gb: no instance, and not draining"; }
quote --slice "mem>=8Q" >"$T/q.json"
jq -e '.fits == false and (.reason | test("GPUPOOL_SLICE=mem>=8Q: mem>= takes a size"))' \
	"$T/q.json" >/dev/null || { cat "$T/q.json"; fail "a malformed slice should be named"; }
# The fleet's view counts the instances, not the GPU in MIG mode as well.
fpoolctl ops-ro --pool "$POOL" status --json >"$T/fleet.json"
jq -e '[.fleet.gpus, .fleet.memory_total] == [2, 6442450944] and ([.hosts[0].gpus[] | select(.instance)] | length == 2)' \
	"$T/fleet.json" >/dev/null || { cat "$T/fleet.json"; fail "fleet status over MIG"; }
fleet_stop 2
echo PASS
