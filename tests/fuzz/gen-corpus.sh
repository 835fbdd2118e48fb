#!/bin/sh
# gen-corpus.sh -- regenerate the seed corpora under corpus/ (checked in; run this only
# to refresh them). Needs nvcc, protoc-c and python3.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
corpus=$here/corpus
kernels=$top/tests/kernels
mkdir -p "$corpus/frame" "$corpus/config" "$corpus/image" "$corpus/ptx"

# ptx: nvcc's PTX for kernels that between them use most of what the parser knows
# (initializers.ptx is hand-written: nvcc writes initial values as bytes).
for k in vector_add constmem atomics half devfunc warp asmops simd intops heap localmem \
	printf managed structs types8 rounding video; do
	"$nvcc" -ptx -arch=compute_75 "$kernels/$k.cu" -o "$corpus/ptx/$k.ptx"
done
# the sm_80+ instructions (cp.async, ldmatrix, mma, wmma, FP8): compute_90 PTX
"$nvcc" -ptx -arch=compute_90 "$kernels/sm90/tensor.cu" -o "$corpus/ptx/tensor.ptx"

# image: one kernel as nvcc packs it: zstd, LZ4 and plain fatbins, two PTX versions,
# SASS only, a cubin, PTX text.
va=$kernels/vector_add.cu
"$nvcc" -fatbin -arch=compute_75 "$va" -o "$corpus/image/zstd.fatbin"
"$nvcc" -fatbin -arch=compute_75 --compress-mode=speed "$va" -o "$corpus/image/lz4.fatbin"
"$nvcc" -fatbin -arch=compute_75 --no-compress "$va" -o "$corpus/image/plain.fatbin"
"$nvcc" -fatbin -gencode arch=compute_75,code=compute_75 -gencode arch=compute_86,code=compute_86 \
	"$va" -o "$corpus/image/multi.fatbin"
"$nvcc" -fatbin -gencode arch=compute_75,code=sm_75 "$va" -o "$corpus/image/sass.fatbin"
"$nvcc" -cubin -arch=sm_75 "$va" -o "$corpus/image/vector_add.cubin"
cp "$corpus/ptx/vector_add.ptx" "$corpus/image/vector_add.ptx"
# a link bundle (docs/protocol.md): the PTX text and the plain fatbin as its two entries
python3 - "$corpus/image" <<'PY'
import struct, sys
d = sys.argv[1]
ptx = open(d + "/vector_add.ptx", "rb").read() + b"\0"
ents = [(1, b"a.ptx\0", ptx), (2, b"b.fatbin\0", open(d + "/plain.fatbin", "rb").read())]
body = b"".join(struct.pack("<IIQ", t, len(n), len(x)) + n + x for t, n, x in ents)
hdr = struct.pack("<IHHIIQ", 0x4B4E4C47, 1, 24, len(ents), 0, 24 + len(body))
open(d + "/link.bundle", "wb").write(hdr + body)
PY

# config: the example and one with every kind of line.
cp "$top/examples/gpupoold.conf" "$corpus/config/example.conf"
cat >"$corpus/config/full.conf" <<'CONF'
listen [::1]:7420
tls_cert "/etc/gpupool/server cert.pem"
tls_key /etc/gpupool/server.key # trailing comment
tls_ca /etc/gpupool/ca.pem
driver /usr/lib/gpupool/softgpu/libcuda.so.1
worker /usr/libexec/gpupool/gpupool-worker
admin_socket /run/gpupool/admin.sock
admin_group gpupool
placement binpack
default_memory 512MiB
queue_timeout 0
idle_timeout 600
drain_grace 5
max_sessions 8
log_level debug
tenant alice sessions=4 gpus=2 memory=48G
tenant * sessions=1 gpus=1 memory=1T
token 6f1d0c2b9a874e3f8d5b alice
CONF

# frame: byte 0 seeds how the stream is cut into feeds, byte 1 picks the decoder's
# limit (fuzz_frame.c), then frames whose bodies protoc-c encodes from text.
enc() { printf '%s' "$2" | protoc-c --encode="gp.$1" -I"$top/proto" "$top/proto/gpupool.proto"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
enc Hello 'protocol_version: 1 cuda_version: 13000 client_host: "h" client_pid: 7 program: "a.out" gpus: 1 memory: 1048576 token: "0123456789abcdef"' >"$tmp/hello"
enc HelloReply 'status: 0 protocol_version: 1 session_id: 9 driver_version: 13000 device { name: "softgpu" uuid: "0123456789abcdef" total_mem: 1073741824 attribute: [0, 1024, 1024] unsupported_attribute: 7 } tenant: "default"' >"$tmp/hello_reply"
enc Call 'arg: [1, 4096]' >"$tmp/call_alloc"
enc Call 'arg: [1, 3] name: "vecAdd"' >"$tmp/call_name"
enc Reply 'result: 0 out: [140737488355328] deferred { result: 700 request_id: 3 type: 130 } message: "m"' >"$tmp/reply"
enc Call 'arg: [1, 5, 4, 1, 1, 256, 1, 1, 0, 0] blob: "\001\002\003\004\005\006\007\010"' >"$tmp/launch"
enc Reply 'result: 0 out: [3] function { name: "vecAdd" handle: 4 param { offset: 0 size: 8 } param { offset: 8 size: 4 } attribute: [1024, 0, 0] }' >"$tmp/module_reply"
enc AdmitRequest 'tenant: "alice" gpus: 1 memory: 1024 client_host: "h" client_pid: 1 program: "p"' >"$tmp/admit"
python3 - "$tmp" "$corpus/frame" <<'PY'
import struct, sys
tmp, out = sys.argv[1], sys.argv[2]
def body(name):
    return open(f"{tmp}/{name}", "rb").read()
def frame(typ, msg=b"", bulk=b"", rid=1, flags=0):
    return struct.pack("<IIQHHHH", len(msg), len(bulk), rid, typ, flags, 0x5047, 0) + msg + bulk
seeds = {
    "hello": (0, 0, frame(1, body("hello"))),
    "hello_reply": (0, 0, frame(2, body("hello_reply"))),
    "call_split": (7, 0, frame(110, body("call_alloc"), rid=2) + frame(123, body("call_name"), rid=3)),
    "htod_more": (3, 0, frame(112, body("call_alloc"), b"\xab" * 40, rid=4, flags=2)
                  + frame(4, b"", b"\xcd" * 24, rid=4)),
    "launch_noreply": (1, 0, frame(130, body("launch"), rid=5, flags=1) + frame(3, body("reply"), rid=5)),
    "module_reply": (200, 0, frame(3, body("module_reply"), rid=6) + frame(201, body("admit"), rid=7)),
    "small_limit": (0, 2, frame(5) + frame(110, body("call_alloc"), b"\0" * 200)),
    "partial": (11, 0, frame(3, body("reply"))[:30]),
    "bulk_8k": (0, 0, frame(112, body("call_alloc"), bytes(range(256)) * 32, rid=8)),
}
for name, (split, limit, stream) in seeds.items():
    open(f"{out}/{name}", "wb").write(bytes([split, limit]) + stream)
PY

# ptx.dict: the words the PTX parser compares against (libFuzzer -dict).
{
	echo "# ptx.dict -- generated by gen-corpus.sh from the string literals of softgpu/ptx_*.c"
	grep -oh '"[.%a-z_0-9A-Z]\{1,24\}"' "$top"/softgpu/ptx_*.c "$top/softgpu/ptx.h" | sort -u
	printf '"%s"\n' '{' '}' '[' ']' '(' ')' ';' ',' '@' '!' '+' '-' '<' '>' '|' \
		'0f3F800000' '0d3FF0000000000000' '0x' '//' '/*' '*/'
} >"$here/ptx.dict"
echo "gen-corpus: $(find "$corpus" -type f | wc -l) files under $corpus"
