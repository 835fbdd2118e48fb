/* stream_objects.c -- TOOLS_CONTEXT slots 51 and 39, what cuBLAS asks to find its per-stream
 * workspace: the library's object for a stream and that object's id, for a created stream and
 * the legacy and per-thread default streams, and the refusals (another context's stream or
 * object, a destroyed stream, no object). Run directly on softgpu and through the pool, whose
 * interposer answers them itself (interposer/api_stream.c). */
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#define CHECK(cond, what)                             \
	do {                                          \
		if (!(cond)) {                        \
			printf("FAILED: %s\n", what); \
			return 1;                     \
		}                                     \
	} while (0)

typedef CUresult (*stream_obj_fn)(CUcontext ctx, CUstream s, void **obj, int per_thread);
typedef CUresult (*stream_id_fn)(CUcontext ctx, void *obj, unsigned long long *id);

static const CUuuid tools_context = {{0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6,
				      0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2}};

int main(void)
{
	const void *const *tc = NULL;
	stream_obj_fn obj_of;
	stream_id_fn id_of;
	CUcontext a, b;
	CUstream s, gone;
	CUdevice dev;
	void *os, *onull, *olegacy, *opt, *opt2, *o;
	unsigned long long ids, idl, idp, id, want;

	CHECK(cuInit(0) == CUDA_SUCCESS && cuDeviceGet(&dev, 0) == CUDA_SUCCESS, "cuInit");
	CHECK(cuGetExportTable((const void **)&tc, &tools_context) == CUDA_SUCCESS && tc,
	      "cuGetExportTable(TOOLS_CONTEXT)");
	obj_of = (stream_obj_fn)tc[51];
	id_of = (stream_id_fn)tc[39];
	CHECK(cuCtxCreate(&b, NULL, 0, dev) == CUDA_SUCCESS, "context b");
	CHECK(cuCtxCreate(&a, NULL, 0, dev) == CUDA_SUCCESS, "context a (current)");
	CHECK(cuStreamCreate(&s, 0) == CUDA_SUCCESS && cuStreamCreate(&gone, 0) == CUDA_SUCCESS,
	      "streams");

	/* a created stream: its object, whose id is cuStreamGetId's */
	CHECK(obj_of(a, s, &os, 0) == CUDA_SUCCESS && os, "object of a stream");
	CHECK(obj_of(NULL, s, &o, 0) == CUDA_SUCCESS && o == os, "NULL context means current");
	CHECK(id_of(a, os, &ids) == CUDA_SUCCESS, "id of a stream's object");
	CHECK(cuStreamGetId(s, &want) == CUDA_SUCCESS && ids == want, "the id is cuStreamGetId's");

	/* the legacy default stream: NULL without per_thread, or CU_STREAM_LEGACY */
	CHECK(obj_of(a, NULL, &onull, 0) == CUDA_SUCCESS &&
		      obj_of(a, CU_STREAM_LEGACY, &olegacy, 0) == CUDA_SUCCESS && onull == olegacy,
	      "object of the legacy stream");
	CHECK(id_of(a, olegacy, &idl) == CUDA_SUCCESS &&
		      cuStreamGetId(CU_STREAM_LEGACY, &want) == CUDA_SUCCESS && idl == want,
	      "id of the legacy stream");
	/* the per-thread default stream: NULL with per_thread, or CU_STREAM_PER_THREAD */
	CHECK(obj_of(a, NULL, &opt, 1) == CUDA_SUCCESS &&
		      obj_of(a, CU_STREAM_PER_THREAD, &opt2, 0) == CUDA_SUCCESS && opt == opt2,
	      "object of the per-thread stream");
	CHECK(id_of(a, opt, &idp) == CUDA_SUCCESS &&
		      cuStreamGetId(CU_STREAM_PER_THREAD, &want) == CUDA_SUCCESS && idp == want,
	      "id of the per-thread stream");
	CHECK(os != olegacy && os != opt && olegacy != opt && ids != idl && ids != idp &&
		      idl != idp,
	      "three streams, three objects, three ids");

	/* refusals */
	CHECK(obj_of(b, s, &o, 0) == CUDA_ERROR_INVALID_HANDLE, "a stream of another context");
	CHECK(id_of(b, os, &id) == CUDA_ERROR_INVALID_HANDLE, "an object of another context");
	CHECK(id_of(b, olegacy, &id) == CUDA_ERROR_INVALID_HANDLE,
	      "another context's legacy stream object");
	CHECK(cuStreamDestroy(gone) == CUDA_SUCCESS, "destroy");
	CHECK(obj_of(a, gone, &o, 0) == CUDA_ERROR_INVALID_HANDLE, "a destroyed stream");
	CHECK(obj_of(a, s, NULL, 0) == CUDA_ERROR_INVALID_VALUE, "no place for the object");
	CHECK(id_of(a, NULL, &id) == CUDA_ERROR_INVALID_VALUE, "no object");

	CHECK(cuStreamDestroy(s) == CUDA_SUCCESS && cuCtxDestroy(a) == CUDA_SUCCESS &&
		      cuCtxDestroy(b) == CUDA_SUCCESS,
	      "cleanup");
	printf("OK: stream objects and ids (%llu %llu %llu)\n", ids, idl, idp);
	return 0;
}
