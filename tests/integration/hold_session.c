/* hold_session.c -- a driver-API client that opens a session, allocates and
 * fills device memory, reads it back to check it, says READY and then waits
 * for a line on stdin (or EOF) before releasing everything. The integration
 * tests use it to look at a live session from poolctl.
 *
 * usage: hold_session BYTES [ALLOCATIONS] [--loop] [--attrs N] [--sms]
 * --loop copies host to device over and over after READY until killed.
 * --attrs N reads every device attribute N times first (answered without the network).
 * --sms ends the READY line with "sms N", the device's MULTIPROCESSOR_COUNT.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#define CHECK(call)                                                    \
	do {                                                           \
		CUresult r_ = (call);                                  \
		if (r_ != CUDA_SUCCESS) {                              \
			const char *n_ = NULL;                         \
			cuGetErrorName(r_, &n_);                       \
			printf("ERROR %s %s\n", #call, n_ ? n_ : "?"); \
			fflush(stdout);                                \
			return 1;                                      \
		}                                                      \
	} while (0)

int main(int argc, char **argv)
{
	size_t bytes = argc > 1 ? strtoull(argv[1], NULL, 0) : 1 << 20;
	int count = argc > 2 && argv[2][0] != '-' ? atoi(argv[2]) : 1;
	int loop = 0, attrs = 0, sms = 0;
	CUdeviceptr *d = calloc((size_t)count, sizeof(*d));
	unsigned char *h = malloc(bytes), *back = malloc(bytes);
	size_t fr, tot;
	CUcontext ctx;
	CUdevice dev;
	char line[64];

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--loop") == 0)
			loop = 1;
		else if (strcmp(argv[i], "--sms") == 0)
			sms = 1;
		else if (strcmp(argv[i], "--attrs") == 0 && i + 1 < argc)
			attrs = atoi(argv[++i]);
	}
	if (!d || !h || !back)
		return 1;
	for (size_t i = 0; i < bytes; i++)
		h[i] = (unsigned char)(i * 31 + 7);
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	for (int k = 0; k < attrs; k++) {
		char name[256];
		size_t mem;
		int v;

		for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; a++)
			cuDeviceGetAttribute(&v, (CUdevice_attribute)a, dev);
		CHECK(cuDeviceGetName(name, sizeof(name), dev));
		CHECK(cuDeviceTotalMem(&mem, dev));
	}
	CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
	for (int i = 0; i < count; i++) {
		CHECK(cuMemAlloc(&d[i], bytes));
		CHECK(cuMemcpyHtoD(d[i], h, bytes));
		memset(back, 0, bytes);
		CHECK(cuMemcpyDtoH(back, d[i], bytes));
		if (memcmp(h, back, bytes) != 0) {
			printf("ERROR readback mismatch\n");
			return 1;
		}
	}
	CHECK(cuMemGetInfo(&fr, &tot));
	{
		/* Which GPU of the pool this is, as poolctl spells it. */
		CUuuid u;
		char id[48];
		int k = sprintf(id, "GPU-");

		CHECK(cuDeviceGetUuid(&u, dev));
		for (int i = 0; i < 16; i++) {
			k += sprintf(id + k, "%02x", (unsigned char)u.bytes[i]);
			if (i == 3 || i == 5 || i == 7 || i == 9)
				id[k++] = '-';
		}
		id[k] = '\0';
		printf("READY %zu free %zu total %zu uuid %s", bytes * (size_t)count, fr, tot, id);
		if (sms) {
			int n = 0;

			CHECK(cuDeviceGetAttribute(&n, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
						   dev));
			printf(" sms %d", n);
		}
		printf("\n");
	}
	fflush(stdout);
	while (loop)
		CHECK(cuMemcpyHtoD(d[0], h, bytes));
	if (!fgets(line, sizeof(line), stdin))
		line[0] = '\0';
	for (int i = 0; i < count; i++)
		CHECK(cuMemFree(d[i]));
	CHECK(cuCtxDestroy(ctx));
	printf("DONE\n");
	return 0;
}
