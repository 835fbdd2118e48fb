/* alias.c -- a device address that equals the address of host memory in the client must
 * never be handed out: unified copies (cuMemcpy) tell the two apart by address. The test
 * frees a device allocation, maps host memory at its address, allocates again, and checks
 * that the new allocation went elsewhere and that a unified copy reaches the host buffer. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include <cuda.h>

#define MIB (1u << 20)

int main(void)
{
	CUcontext ctx;
	CUdevice dev;
	CUdeviceptr a, b;
	unsigned char pattern[4096], *host;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, NULL, 0, dev))
		return 2;
	if (cuMemAlloc(&a, MIB) || cuMemFree(a))
		return 2;
	/* Host memory exactly where the device allocation was. */
	host = mmap((void *)(uintptr_t)a, MIB, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (host != (void *)(uintptr_t)a) {
		printf("FAILED: the freed device range is still reserved here (%p)\n",
		       (void *)host);
		return 1;
	}
	memset(host, 0, MIB);
	if (cuMemAlloc(&b, MIB)) {
		printf("FAILED: the second allocation failed\n");
		return 1;
	}
	printf("device %#llx, host %p\n", (unsigned long long)b, (void *)host);
	if (b == a) {
		printf("FAILED: a device address equal to host memory was handed out\n");
		return 1;
	}
	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (unsigned char)(i * 13 + 5);
	if (cuMemcpyHtoD(b, pattern, sizeof(pattern)) ||
	    cuMemcpy((CUdeviceptr)(uintptr_t)host, b, sizeof(pattern)))
		return 2;
	if (memcmp(host, pattern, sizeof(pattern)) != 0) {
		printf("FAILED: the unified copy did not reach host memory\n");
		return 1;
	}
	printf("PASSED\n");
	return 0;
}
