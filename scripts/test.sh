#!/bin/sh
# test.sh [BUILD_DIR] -- build everything and run every test (unit, softgpu, runtime
# programs, integration); then the same again in an ASan+UBSan build (skip that with
# GP_TEST_SANITIZE=0). Exits non-zero when anything fails.
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
	(cd "$asan" && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		ctest --output-on-failure -j "$jobs")
fi
echo "test: all tests passed"
