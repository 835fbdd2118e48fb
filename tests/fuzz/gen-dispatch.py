#!/usr/bin/env python3
"""gen-dispatch.py [DIR] -- writes the seeds of fuzz_dispatch (default: corpus/dispatch).

Each seed is a session in fuzz_dispatch.c's input form: per op the call's number, a
flags byte (bit 0: sent without waiting), then a value per argument. The values below
name their encoding (fuzz_dispatch.c, value()): lit(k) a literal below 32, ref(k) the
k-th latest value of the argument's kind that a reply answered (a context for a CTX
argument, a device pointer for a DPTR one...), inside(k) the latest plus 4 k, any(k) the
k-th latest of any kind, pow2(k), pages(k) k << 12, u64(v) a 64-bit literal.
"""
import os
import struct
import sys

# Call numbers of include/gpupool/calls.h.
N = dict(CTX_CREATE=100, CTX_DESTROY=101, CTX_SYNCHRONIZE=102, PRIMARY_RETAIN=103,
         PRIMARY_RELEASE=104, PRIMARY_RESET=105, CTX_GET_LIMIT=107, CTX_SET_LIMIT=108,
         CTX_STREAM_PRIORITIES=109, MEM_ALLOC=110, MEM_FREE=111, MEMCPY_HTOD=112,
         MEMCPY_DTOH=113, MEM_GET_INFO=114, MEMCPY_DTOD=115, MEMSET=116, MEM_ALLOC_PITCH=117,
         MEMCPY_DTOH_ASYNC=118, MODULE_LOAD=120, MODULE_UNLOAD=122, GET_GLOBAL=123,
         LIBRARY_LOAD=124, LIBRARY_UNLOAD=125, OCCUPANCY=126, FUNC_SET_ATTRIBUTE=127,
         FUNC_DESCRIBE=128, LAUNCH=130, STREAM_CREATE=140, STREAM_DESTROY=141,
         STREAM_SYNCHRONIZE=142, STREAM_QUERY=143, STREAM_WAIT_EVENT=144,
         LAUNCH_HOST_FUNC=145, EVENT_CREATE=150, EVENT_DESTROY=151, EVENT_RECORD=152,
         EVENT_SYNCHRONIZE=153, EVENT_QUERY=154, EVENT_ELAPSED=155, GRAPH_CREATE=160,
         GRAPH_DESTROY=161, GRAPH_CLONE=162, GRAPH_NODE_COUNT=163, GRAPH_ADD_KERNEL=164,
         GRAPH_ADD_MEMSET=165, GRAPH_ADD_COPY=166, GRAPH_ADD_HOST=167, GRAPH_EDGES=169,
         GRAPH_INSTANTIATE=170, GRAPH_EXEC_DESTROY=171, GRAPH_LAUNCH=172,
         GRAPH_EXEC_UPDATE=173, STREAM_BEGIN_CAPTURE=175, STREAM_END_CAPTURE=176,
         STREAM_CAPTURE_INFO=177, MEM_ALLOC_ASYNC=180, MEM_FREE_ASYNC=181, POOL_CREATE=182,
         POOL_DESTROY=183, POOL_SET_ATTRIBUTE=184, POOL_GET_ATTRIBUTE=185, POOL_TRIM=186,
         POOL_GET_ACCESS=188, POOL_OF_DEVICE=189, POOL_SET_CURRENT=190, MANAGED_ALLOC=191,
         MANAGED_DIFF=193, MANAGED_FETCH=194, MANAGED_GLOBAL=195, LAUNCH_EX=204,
         VMM_GRANULARITY=220, VMM_CREATE=221, VMM_RELEASE=222, VMM_PROPS=223,
         VMM_RETAIN=224, VMM_RESERVE=225, VMM_ADDRESS_FREE=226, VMM_MAP=227, VMM_UNMAP=228,
         VMM_SET_ACCESS=229, VMM_GET_ACCESS=230, GRAPH_QUERY=240, GRAPH_NODE_OP=241,
         GRAPH_CLIENT_COPY=174, MANAGED_PUSH=192, TENSOR_MAP_ENCODE=205)


def lit(k): return bytes([k & 31])
def ref(k=0): return bytes([0x20 | k])
def inside(k): return bytes([0x40 | k])
def u64(v): return bytes([0x60]) + struct.pack('<Q', v)
def any_(k=0): return bytes([0x80 | k])
def pow2(k): return bytes([0xa0 | k])
def pages(k): return bytes([0xc0 | k])


def op(name, *vals, nowait=False):
    return bytes([N[name], 1 if nowait else 0]) + b''.join(vals)


# BULK_IN: as many bytes as width * height (fill byte 0x5a); an image of corpus/ptx.
FILL = bytes([0x80 | 0x5a])
def image(k): return bytes([k << 2])
# NAME: one of fuzz_dispatch.c's symbols.
def sym(k): return bytes([k])
# BLOB of 8-byte words (the first three of a pointer's kind), trimmed to the layout.
def params(words, trim, *vals):
    b = next(b for b in range(0x80) if b % 9 == words and (b >> 4) & 7 == trim)
    return bytes([b]) + b''.join(vals)


CTX = op('CTX_CREATE', lit(0), lit(0))
S = lit(0)  # the legacy default stream

seeds = {
    'copies': CTX + op('MEM_ALLOC', ref(), pow2(12))
    + op('MEMCPY_HTOD', ref(), ref(), pow2(12), lit(1), lit(0), S, FILL)
    + op('MEMCPY_DTOH', ref(), ref(), pow2(12), lit(1), lit(0), S, pow2(12))
    + op('MEMSET', ref(), inside(4), lit(7), lit(1), pow2(8), lit(1), lit(0), S, nowait=True)
    + op('MEMCPY_DTOD', ref(), inside(64), ref(), pow2(10), lit(1), lit(0), lit(0), S)
    + op('MEMCPY_DTOH_ASYNC', ref(), ref(), pow2(9), S)
    + op('MEM_GET_INFO', ref()) + op('MEM_FREE', ref(), ref())
    + op('MEM_ALLOC', ref(), pow2(27)),  # beyond the session's 64 MiB
    'launch': CTX + op('MEM_ALLOC', ref(), pow2(12)) + op('MEM_ALLOC', ref(), pow2(12))
    + op('MEM_ALLOC', ref(), pow2(12)) + op('MODULE_LOAD', ref(), image(0))
    + op('LAUNCH', ref(), ref(), lit(2), lit(1), lit(1), lit(8), lit(1), lit(1), lit(0), S,
         params(4, 4, ref(2), ref(1), ref(0), lit(16)), nowait=True)
    + op('CTX_SYNCHRONIZE', ref())
    + op('MEMCPY_DTOH', ref(), ref(), pow2(6), lit(1), lit(0), S, pow2(6))
    + op('OCCUPANCY', ref(), ref(), pow2(7), lit(0), lit(0))
    + op('FUNC_SET_ATTRIBUTE', ref(), ref(), lit(8), pow2(10))
    + op('FUNC_DESCRIBE', ref(), ref())
    + op('MODULE_UNLOAD', ref(), ref()),
    'printf': CTX + op('MODULE_LOAD', ref(), image(1))
    + op('LAUNCH', ref(), ref(), lit(1), lit(1), lit(1), lit(4), lit(1), lit(1), lit(0), S,
         params(1, 4, lit(3)), nowait=True)
    + op('CTX_SYNCHRONIZE', ref()),
    'globals': op('PRIMARY_RETAIN', lit(0)) + op('MODULE_LOAD', ref(), image(3))
    + op('GET_GLOBAL', ref(), ref(), sym(5)) + op('GET_GLOBAL', ref(), ref(), sym(9))
    + op('MEM_ALLOC', ref(), pow2(8))
    + op('LAUNCH', ref(), ref(), lit(1), lit(1), lit(1), lit(1), lit(1), lit(1), lit(0), S,
         params(1, 0, ref(0)))
    + op('CTX_GET_LIMIT', ref(), lit(0)) + op('CTX_SET_LIMIT', ref(), lit(0), pow2(11))
    + op('CTX_SET_LIMIT', ref(), lit(2), pow2(20)) + op('CTX_STREAM_PRIORITIES', ref())
    + op('MEM_ALLOC_PITCH', ref(), lit(30), lit(4), lit(4))
    + op('MEMSET', ref(), ref(), lit(1), lit(4), lit(28), lit(4), any_(0), S)
    + op('PRIMARY_RELEASE', lit(0)),
    'streams': CTX + op('STREAM_CREATE', ref(), lit(1), lit(0))
    + op('EVENT_CREATE', ref(), lit(0)) + op('EVENT_CREATE', ref(), lit(0))
    + op('EVENT_RECORD', ref(), ref(1), ref(), nowait=True)
    + op('STREAM_WAIT_EVENT', ref(), ref(), ref(1), lit(0), nowait=True)
    + op('LAUNCH_HOST_FUNC', ref(), ref(), lit(5), lit(6), lit(3), lit(0), nowait=True)
    + op('EVENT_RECORD', ref(), ref(0), ref(), nowait=True)
    + op('STREAM_SYNCHRONIZE', ref(), ref()) + op('EVENT_SYNCHRONIZE', ref(), ref())
    + op('EVENT_QUERY', ref(), ref()) + op('EVENT_ELAPSED', ref(), ref(1), ref(0))
    + op('STREAM_QUERY', ref(), ref()) + op('EVENT_DESTROY', ref(), ref())
    + op('STREAM_DESTROY', ref(), ref()),
    'graph': CTX + op('MEM_ALLOC', ref(), pow2(12)) + op('GRAPH_CREATE', ref(), lit(0))
    + op('GRAPH_ADD_MEMSET', ref(), ref(), ref(), lit(7), lit(1), pow2(10), lit(1), lit(0),
         lit(0), lit(0))
    + op('GRAPH_ADD_HOST', ref(), ref(), lit(9), lit(1), lit(0), lit(0))
    + op('GRAPH_EDGES', ref(), ref(), lit(0), params(2, 0, any_(1), any_(0)))
    + op('GRAPH_NODE_COUNT', ref(), ref(), lit(0))
    + op('GRAPH_INSTANTIATE', ref(), ref(), lit(0))
    + op('GRAPH_LAUNCH', ref(), ref(), S, lit(0), nowait=True)
    + op('GRAPH_LAUNCH', ref(), ref(), S, lit(1), nowait=True)
    + op('CTX_SYNCHRONIZE', ref())
    + op('GRAPH_QUERY', ref(), ref(), lit(0), lit(0), pow2(6))
    + op('GRAPH_CLONE', ref(), ref()) + op('GRAPH_EXEC_UPDATE', ref(), ref(), ref(1))
    + op('GRAPH_EXEC_DESTROY', ref(), ref()) + op('GRAPH_DESTROY', ref(), ref()),
    'capture': CTX + op('MEM_ALLOC', ref(), pow2(12)) + op('STREAM_CREATE', ref(), lit(1), lit(0))
    + op('STREAM_BEGIN_CAPTURE', ref(), ref(), lit(0))
    + op('MEMSET', ref(), ref(), lit(3), lit(1), pow2(8), lit(1), lit(0), ref(), nowait=True)
    + op('LAUNCH_HOST_FUNC', ref(), ref(), lit(5), lit(6), lit(3), lit(0), nowait=True)
    + op('STREAM_CAPTURE_INFO', ref(), ref())
    + op('STREAM_END_CAPTURE', ref(), ref(), lit(0))
    + op('GRAPH_INSTANTIATE', ref(), ref(), lit(0))
    + op('GRAPH_LAUNCH', ref(), ref(), ref(), lit(0), nowait=True)
    + op('STREAM_SYNCHRONIZE', ref(), ref()),
    'vmm': CTX + op('VMM_GRANULARITY', lit(0), lit(0), lit(0))
    + op('VMM_CREATE', lit(0), lit(0), pow2(21), lit(0), lit(0))
    + op('VMM_RESERVE', lit(0), pow2(22), lit(0), lit(0), lit(0))
    + op('VMM_MAP', lit(0), ref(), pow2(21), lit(0), ref(), lit(0))
    + op('VMM_SET_ACCESS', lit(0), ref(), pow2(21), lit(1), lit(0), lit(0))
    + op('VMM_GET_ACCESS', lit(0), lit(0), ref())
    + op('MEMCPY_HTOD', ref(), ref(), pow2(12), lit(1), lit(0), S, FILL)
    + op('VMM_RETAIN', lit(0), ref()) + op('VMM_PROPS', lit(0), ref())
    + op('VMM_RELEASE', lit(0), ref())
    + op('VMM_UNMAP', lit(0), ref(), pow2(21))
    + op('VMM_RELEASE', lit(0), ref())
    + op('VMM_ADDRESS_FREE', lit(0), ref(), pow2(22)),
    'vmm-left': CTX + op('VMM_CREATE', lit(0), lit(1), pow2(21), lit(0), lit(0))
    + op('VMM_RESERVE', lit(0), pow2(21), lit(0), lit(0), lit(0))
    + op('VMM_MAP', lit(0), ref(), pow2(21), lit(0), ref(), lit(0))
    + op('VMM_SET_ACCESS', lit(0), ref(), pow2(21), lit(3), lit(0), lit(0)),
    'pools': CTX + op('POOL_OF_DEVICE', lit(0), lit(0)) + op('POOL_CREATE', lit(0), lit(0))
    + op('MEM_ALLOC_ASYNC', ref(), pow2(12), ref(), S)
    + op('MEM_FREE_ASYNC', ref(), ref(), S, nowait=True)
    + op('POOL_SET_ATTRIBUTE', ref(), lit(4), pow2(20), nowait=True)
    + op('POOL_GET_ATTRIBUTE', ref(), lit(5))
    + op('POOL_TRIM', ref(), lit(0), nowait=True)
    + op('POOL_GET_ACCESS', ref(), lit(1)) + op('POOL_SET_CURRENT', lit(0), ref())
    + op('MEM_ALLOC_ASYNC', ref(), pow2(16), lit(0), S)
    + op('STREAM_SYNCHRONIZE', ref(), S) + op('POOL_DESTROY', ref(1)),
    'managed': CTX + op('MANAGED_ALLOC', ref(), pow2(12), lit(1))
    + op('LIBRARY_LOAD', ref(), image(2))
    + op('MANAGED_GLOBAL', ref(), ref(), sym(4))
    + op('LAUNCH', ref(), ref(), lit(1), lit(1), lit(1), lit(4), lit(1), lit(1), lit(0), S,
         params(2, 4, ref(2), lit(2)), nowait=True)
    + op('CTX_SYNCHRONIZE', ref())
    + op('MANAGED_DIFF', pow2(16)) + op('MANAGED_FETCH', pow2(12))
    + op('LIBRARY_UNLOAD', ref()),
    'two-devices': op('CTX_CREATE', lit(1), lit(0)) + op('MEM_ALLOC', ref(), pow2(12))
    + CTX + op('MEM_ALLOC', ref(), pow2(12))
    + op('MEMCPY_DTOD', ref(), ref(), ref(1), pow2(12), lit(1), lit(0), lit(0), S)
    + op('CTX_DESTROY', ref(1)) + op('PRIMARY_RESET', lit(1)),
    'raw-end': CTX + op('MEM_ALLOC', ref(), pow2(12))
    + bytes([0xff, 0, N['MEM_ALLOC'], 0, 4, 0x08, 0x01, 0x10, 0x02]),
}

VADD = (CTX + op('MEM_ALLOC', ref(), pow2(12)) + op('MEM_ALLOC', ref(), pow2(12))
        + op('MEM_ALLOC', ref(), pow2(12)) + op('MODULE_LOAD', ref(), image(0)))
VADD_PARAMS = params(4, 4, ref(2), ref(1), ref(0), lit(16))
seeds.update({
    'graph-kernel': VADD + op('GRAPH_CREATE', ref(), lit(0))
    + op('GRAPH_ADD_KERNEL', ref(), ref(), ref(), lit(1), lit(1), lit(1), lit(8), lit(1),
         lit(1), lit(0), lit(0), lit(0), VADD_PARAMS)
    + op('GRAPH_ADD_COPY', ref(), ref(), ref(0), ref(1), pow2(6), lit(1), lit(0), lit(0),
         lit(0), lit(0))
    + op('GRAPH_EDGES', ref(), ref(), lit(0), params(2, 0, any_(1), any_(0)))
    + op('GRAPH_INSTANTIATE', ref(), ref(), lit(0))
    + op('GRAPH_NODE_OP', ref(), ref(1), ref(), ref(), lit(1), lit(0))
    + op('GRAPH_NODE_OP', ref(), ref(1), ref(), ref(), lit(2), lit(0))
    + op('GRAPH_LAUNCH', ref(), ref(), S, lit(0), nowait=True)
    + op('GRAPH_ADD_KERNEL', ref(), ref(), ref(), lit(2), lit(1), lit(1), lit(8), lit(1),
         lit(1), lit(0), ref(1), ref(), VADD_PARAMS)
    + op('GRAPH_LAUNCH', ref(), ref(), S, lit(0))
    + op('STREAM_SYNCHRONIZE', ref(), S)
    + op('MEMCPY_DTOH', ref(), ref(), pow2(6), lit(1), lit(0), S, pow2(6))
    + op('GRAPH_NODE_OP', ref(), ref(1), lit(0), ref(), lit(0), lit(0)),
    'launch-ex': VADD + op('STREAM_CREATE', ref(), lit(1), lit(0))
    + op('LAUNCH_EX', ref(), ref(), lit(2), lit(1), lit(1), lit(8), lit(1), lit(1), lit(0),
         ref(), lit(2), lit(0), lit(0), lit(0), lit(0), lit(0), lit(0), lit(0), lit(0),
         lit(0), lit(0), lit(0), VADD_PARAMS)
    + op('LAUNCH_EX', ref(), ref(), lit(1), lit(1), lit(1), lit(4), lit(1), lit(1), lit(0),
         S, lit(1), lit(1), lit(0), lit(0), lit(0), lit(0), lit(0), lit(0), lit(0),
         lit(0), lit(0), lit(0), VADD_PARAMS, nowait=True)
    + op('STREAM_SYNCHRONIZE', ref(), ref()),
    'client-copy': CTX + op('MEM_ALLOC', ref(), pow2(12)) + op('GRAPH_CREATE', ref(), lit(0))
    + op('GRAPH_CLIENT_COPY', ref(), ref(), pow2(10), lit(1), lit(0), S, ref(), lit(7), lit(1))
    + op('GRAPH_CLIENT_COPY', ref(), ref(), pow2(9), lit(2), pow2(9), S, ref(), lit(8), lit(0))
    + op('GRAPH_INSTANTIATE', ref(), ref(), lit(0))
    + op('GRAPH_LAUNCH', ref(), ref(), S, lit(0), nowait=True)
    + op('STREAM_SYNCHRONIZE', ref(), S)
    + op('STREAM_CREATE', ref(), lit(1), lit(0))
    + op('STREAM_BEGIN_CAPTURE', ref(), ref(), lit(0))
    + op('GRAPH_CLIENT_COPY', ref(), ref(), pow2(8), lit(1), lit(0), ref(), lit(0), lit(9), lit(1))
    + op('STREAM_END_CAPTURE', ref(), ref(), lit(0))
    + op('GRAPH_INSTANTIATE', ref(), ref(), lit(0))
    + op('GRAPH_LAUNCH', ref(), ref(), ref(), lit(0))
    + op('STREAM_SYNCHRONIZE', ref(), ref()),
    'managed-push': CTX + op('MANAGED_ALLOC', ref(), pow2(12), lit(1))
    + op('MANAGED_PUSH', params(2, 0, ref(0), pow2(8)), bytes([0x11]), pow2(8))
    + op('MEMSET', ref(), ref(), lit(9), lit(4), pow2(6), lit(1), lit(0), S)
    + op('CTX_SYNCHRONIZE', ref())
    + op('MANAGED_DIFF', pow2(16)) + op('MANAGED_FETCH', any_(2))
    + op('MANAGED_PUSH', params(2, 0, inside(4), pow2(4)), bytes([0x12]), pow2(4), nowait=True)
    + op('MEM_FREE', ref(), ref()),
    'hostfn': CTX + op('STREAM_CREATE', ref(), lit(1), lit(0))
    + op('LAUNCH_HOST_FUNC', ref(), ref(), lit(5), lit(6), lit(3), lit(0))
    + op('LAUNCH_HOST_FUNC', ref(), ref(), lit(5), lit(6), lit(3), lit(1))
    + op('LAUNCH_HOST_FUNC', ref(), S, lit(5), lit(6), lit(0), lit(0), nowait=True)
    + op('STREAM_QUERY', ref(), ref()) + op('STREAM_SYNCHRONIZE', ref(), ref())
    + op('STREAM_DESTROY', ref(), ref()),
})

# TENSOR_MAP_ENCODE's struct gp_tensor_desc (include/gpupool/calls.h): a tiled 1-D map of
# 64 bytes, boxes of 16.
DESC = (struct.pack('<5Q', 64, 1, 1, 1, 1) + struct.pack('<4Q', 0, 0, 0, 0)
        + struct.pack('<2I', 0, 1) + struct.pack('<5I', 16, 1, 1, 1, 1)
        + struct.pack('<5I', 1, 1, 1, 1, 1) + struct.pack('<4I', 0, 0, 0, 0)
        + struct.pack('<3i', 0, 0, 0) + struct.pack('<3i', 0, 0, 0) + struct.pack('<2I', 0, 0))
assert len(DESC) == 168
def raw_blob(b):
    return bytes([0xff, (len(b) - 127) // 2]) + b
seeds['tensor-map'] = (CTX + op('MEM_ALLOC', ref(), pow2(12))
                       + op('TENSOR_MAP_ENCODE', ref(), lit(0), ref(), raw_blob(DESC), pow2(7)))

# A library's managed global, its context gone, then pushed to and diffed.
seeds['managed-global-gone'] = (CTX + op('LIBRARY_LOAD', ref(), image(2))
                                + op('MANAGED_GLOBAL', ref(), ref(), sym(4))
                                + op('CTX_DESTROY', ref())
                                + op('MANAGED_PUSH', params(2, 0, ref(0), pow2(12)),
                                     bytes([0x11]), pow2(12))
                                + op('MANAGED_DIFF', pow2(16)) + op('MANAGED_FETCH', any_(2))
                                + CTX + op('MANAGED_GLOBAL', ref(), ref(), sym(4))
                                + op('LIBRARY_UNLOAD', ref())
                                + op('MANAGED_PUSH', params(2, 0, ref(0), pow2(12)),
                                     bytes([0x11]), pow2(12)))

# Parameter blobs of the protocol's limit and one over it (the session ends there), edges too.
def big_blob(k256, fill):
    return bytes([0xfe, k256, fill])
seeds['big-blobs'] = (VADD + op('GRAPH_CREATE', ref(), lit(0))
                      + op('GRAPH_EDGES', ref(), ref(), lit(0), big_blob(0x7f, 0))
                      + op('LAUNCH', ref(), ref(), lit(1), lit(1), lit(1), lit(1), lit(1),
                           lit(1), lit(0), S, big_blob(0x80, 0x11))
                      + op('LAUNCH', ref(), ref(), lit(1), lit(1), lit(1), lit(1), lit(1),
                           lit(1), lit(0), S, big_blob(0xff, 0x11)))

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                          'corpus', 'dispatch')
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), 'wb') as f:
        f.write(data)
