#!/bin/bash
# Lazy loading: of a program's two fatbins only the one whose kernel runs is shipped.
# With CUDA_MODULE_LOADING=EAGER both are.
. "$(dirname "$0")/../integration/lib.sh"
prog=$1

gp_start
out=$(run_client "$prog" 2>&1) || fail "$prog: $out"
wait_for '.sessions | length == 0' 10
loads=$(grep -c "library loaded" "$T/daemon.log" || true)
echo "lazy: $loads library load(s)"
[ "$loads" -eq 1 ] || fail "lazy loading shipped $loads libraries, expected 1"
out=$(CUDA_MODULE_LOADING=EAGER run_client "$prog" 2>&1) || fail "$prog (eager): $out"
wait_for '.sessions | length == 0' 10
loads=$(grep -c "library loaded" "$T/daemon.log" || true)
echo "lazy + eager: $loads library load(s)"
[ "$loads" -eq 3 ] || fail "eager loading should ship both libraries ($loads loads in all)"
gp_stop
echo PASS
