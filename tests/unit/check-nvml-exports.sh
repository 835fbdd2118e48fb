#!/bin/sh
# check-nvml-exports.sh NM EXPORTS LIB... -- each of our libnvidia-ml.so.1 builds exports exactly
# the names of src/nvml_exports.txt: no gpupool or softgpu internals, nothing missing.
set -eu
nm=$1
list=$2
shift 2
want=$(grep -E '^nvml[A-Za-z0-9_]+$' "$list" | sort)
for lib in "$@"; do
	have=$("$nm" -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ { print $3 }' | sort)
	if [ "$have" != "$want" ]; then
		echo "$lib: exports differ from $list:"
		printf '%s\n' "$want" >/tmp/nvml-exports-want.$$
		printf '%s\n' "$have" | diff /tmp/nvml-exports-want.$$ - || true
		rm -f /tmp/nvml-exports-want.$$
		exit 1
	fi
done
echo "exports OK"
