#!/bin/sh
# test-check.sh GPUPOOLD -- check-manifests.py passes on these manifests and fails, naming
# the problem, on copies broken in the ways it is there to catch.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d "${TMPDIR:-/tmp}/gpupool-k8s.XXXXXX")
trap 'rm -rf "$t"' EXIT
gpupoold=$1
python3 "$here/check-manifests.py" "$gpupoold"
broken() { # broken SED_EXPR FILE WHAT: a copy with FILE edited must fail, saying WHAT
	rm -rf "$t/examples" && mkdir -p "$t/examples" "$t/scripts"
	cp -r "$here" "$t/examples/kubernetes" && cp "$here/../../scripts/gen-certs.sh" "$t/scripts/"
	sed -i "$1" "$t/examples/kubernetes/$2"
	if python3 "$t/examples/kubernetes/check-manifests.py" "$gpupoold" 2>"$t/err"; then
		echo "FAIL: a manifest with $2 changed by '$1' passed" >&2
		exit 1
	fi
	grep -q "$3" "$t/err" || { cat "$t/err" >&2; echo "FAIL: should say: $3" >&2; exit 1; }
}
broken 's/component: daemon}/component: gpu}/' service.yaml "does not select"
broken 's/targetPort: gpupool-admin/targetPort: admin/' service.yaml "is no container port"
broken 's/clusterIP: None/clusterIP: ""/' service.yaml "not headless"
broken 's/listen 0.0.0.0:7420/listen 0.0.0.0:7430/' configmap.yaml "listen is not on"
broken 's/admin_name ops read-write/admin_name ops root/' configmap.yaml "gpupoold -n rejects"
broken 's/name: admin-ca, mountPath/name: admin-cert, mountPath/' daemonset.yaml "unknown volume"
broken 's/secretName: tenant-research-tls}/secretName: tenant-x}/' client-pod.yaml "no Secret"
broken 's|/gpupool/libcuda.so.1}|/opt/libcuda.so.1}|' client-pod.yaml "LD_PRELOAD"
broken 's/_gpupool._tcp.gpupool.gpupool/_gpupool._tcp.pool.gpupool/' client-pod.yaml "GPUPOOL_SERVER"
echo PASS
