#!/bin/sh
# test.sh [BUILD_DIR] -- build everything and run every test (unit, softgpu, runtime
# programs, integration); then the same again in an ASan+UBSan build (skip that with
# GP_TEST_SANITIZE=0); then the threaded parts under ThreadSanitizer (skip that with
# GP_TEST_TSAN=0). Exits non-zero when anything fails.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
jobs=$(nproc)

"$top/scripts/build.sh" "$build"
echo "test: running the tests in $build"
(cd "$build" && ctest --output-on-failure -j "$jobs")

if [ "${GP_TEST_SANITIZE:-1}" != 0 ]; then
	asan=$build-asan
	echo "test: the same under AddressSanitizer and UndefinedBehaviorSanitizer ($asan)"
	CMAKE_BUILD_TYPE=Debug GP_CMAKE_ARGS=-DGP_SANITIZE=ON "$top/scripts/build.sh" "$asan"
	# integration.soak is a 30 s load run of paths every other test takes too: the normal
	# stage runs it; here it would only add its half minute.
	(cd "$asan" && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		ctest --output-on-failure -j "$jobs" -E '^integration\.soak$')
fi

# ThreadSanitizer on what runs threads: softgpu's block pool and streams (its own tests, and
# every cudart program run on it directly), the interposer under those programs through a
# pool, one process calling the driver API from many threads (integration.threads), many
# sessions at once (integration.concurrency), and the worker's output reader thread under
# device printf (integration.vector-add), the connection's reader and writers failing at once
# (unit.test_conn). The cudart programs are nvcc's, not
# instrumented: tests/CMakeLists.txt has libtsan preloaded ahead of our libraries there.
# Every process writes its reports under $tsan/tsan-reports, and any report fails the run,
# even one from a process whose exit status no test looks at. There are no suppressions:
# should a report come from code we do not own, add a suppressions= file giving each
# entry's reason rather than widening the net.
if [ "${GP_TEST_TSAN:-1}" != 0 ]; then
	tsan=$build-tsan
	reports=$tsan/tsan-reports
	echo "test: the threaded parts under ThreadSanitizer ($tsan)"
	GP_CMAKE_ARGS=-DGP_TSAN=ON "$top/scripts/build.sh" "$tsan"
	rm -rf "$reports"
	mkdir -p "$reports"
	# As root the workers write there as uids of their own (worker_uids, tests/integration/lib.sh).
	chmod 1777 "$reports"
	rc=0
	(cd "$tsan" && TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 \
log_path=$reports/tsan" \
		ctest --output-on-failure -j "$jobs" \
		-R '^(softgpu_.*|runtime\..*|unit\.test_conn|integration\.(concurrency|threads|vector-add|wait-apart|hostfn))$' \
		-E 'rt_curand') || rc=$?
	if [ -n "$(ls "$reports")" ]; then
		cat "$reports"/* >&2
		echo "test: ThreadSanitizer reported the above" >&2
		exit 1
	fi
	[ "$rc" = 0 ] || exit "$rc"
fi
echo "test: all tests passed"
