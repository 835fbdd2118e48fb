#!/bin/bash
# A compressed module image that unpacks to gigabytes (a zstd "bomb": 96 KiB claiming 3 GiB
# of PTX) is refused with CUDA_ERROR_INVALID_IMAGE before anything is allocated for it, and
# the session goes on to load a module.
. "$(dirname "$0")/lib.sh"

gp_start
out=$("$GP_TESTBIN/raw_client" bomb 2>&1) || fail "raw_client bomb: $out"
echo "$out"
case "$out" in *"claiming 3 GiB of PTX: 200"*) ;; *) fail "the bomb should be CUDA_ERROR_INVALID_IMAGE: $out" ;; esac
wait_for '.sessions | length == 0' 10
gp_stop
echo PASS
