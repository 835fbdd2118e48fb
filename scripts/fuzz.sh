#!/bin/sh
# fuzz.sh [SECONDS [TARGET...]] -- build the fuzz targets as libFuzzer binaries (clang,
# ASan+UBSan) and run each for SECONDS (default 60): frame, config, acct, resolve, image, ptx,
# dispatch.
# New inputs collect in BUILD/fuzz-corpus/TARGET; a crash is saved under
# BUILD/fuzz-artifacts/TARGET/ and makes the script exit 1. tests/fuzz/README.md
# says how to reproduce and keep one. BUILD is GP_FUZZ_BUILD or ./build-fuzz.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${GP_FUZZ_BUILD:-$top/build-fuzz}
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-frame config acct resolve image ptx dispatch}

"$top/scripts/install-deps.sh"
cmake -S "$top" -B "$build" -DCMAKE_C_COMPILER=clang -DGP_FUZZ=ON \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
echo "fuzz: compiling into $build (log: $build/build.log)"
if ! cmake --build "$build" -j "$(nproc)" --target $(printf 'fuzz_%s ' $targets) \
	>"$build/build.log" 2>&1; then
	tail -n 60 "$build/build.log" >&2
	echo "fuzz: build FAILED" >&2
	exit 1
fi

failed=
for t in $targets; do
	work=$build/fuzz-corpus/$t
	art=$build/fuzz-artifacts/$t
	mkdir -p "$work" "$art"
	# An input that takes 25 s (OSS-Fuzz's limit) is a hang.
	set -- -max_total_time="$secs" -timeout=25 -print_final_stats=1 -artifact_prefix="$art/"
	[ -f "$top/tests/fuzz/$t.dict" ] && set -- "$@" -dict="$top/tests/fuzz/$t.dict"
	[ -d "$top/tests/fuzz/regress/$t" ] && set -- "$@" "$top/tests/fuzz/regress/$t"
	echo "fuzz: $t for ${secs}s (log: $build/fuzz-$t.log)"
	if ! "$build/tests/fuzz/fuzz_$t" "$work" "$top/tests/fuzz/corpus/$t" "$@" \
		>"$build/fuzz-$t.log" 2>&1; then
		failed="$failed $t"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|.*invariant failed)' "$build/fuzz-$t.log" >&2 || true
		echo "fuzz: $t FAILED; inputs in $art" >&2
	fi
	grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "$build/fuzz-$t.log" || true
done
if [ -n "$failed" ]; then
	echo "fuzz: failures in:$failed" >&2
	exit 1
fi
echo "fuzz: no failures"
