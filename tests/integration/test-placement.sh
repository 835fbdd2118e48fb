#!/bin/bash
# Placement: spread puts two sessions on different GPUs; binpack on the same one.
. "$(dirname "$0")/lib.sh"
export SOFTGPU_DEVICES=2 SOFTGPU_MEMORY=1G GPUPOOL_MEMORY=256M

gp_config "placement spread"
gp_start
assert_status '.gpus | length == 2' "softgpu should show two GPUs"
hold A 4096
case "$HELD" in READY*) ;; *) fail "first session: $HELD" ;; esac
hold B 4096
case "$HELD" in READY*) ;; *) fail "second session: $HELD" ;; esac
assert_status '[.sessions[].gpus[0]] | sort == [0,1]' "spread: one session per GPU"
assert_status '[.gpus[].memory_reserved] == [268435456, 268435456]' "256 MiB reserved on each GPU"
assert_status 'all(.sessions[]; .memory_limit == 268435456)' "each session's limit is what it asked for"
release A
release B
gp_stop

gp_config "placement binpack"
gp_start
hold A 4096
hold B 4096
assert_status '[.sessions[].gpus[0]] | unique | length == 1' "binpack: both sessions on one GPU"
assert_status '[.gpus[].memory_reserved] | sort == [0, 536870912]' "512 MiB reserved on the one GPU"
release A
release B
wait_for '.sessions | length == 0'
assert_status 'all(.gpus[]; .memory_reserved == 0)' "reservations are released"
gp_stop
echo PASS
