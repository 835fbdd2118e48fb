/* test_multi.c -- several devices and the SOFTGPU_* configuration (run with SOFTGPU_DEVICES=2,
 * SOFTGPU_MEMORY=256M, SOFTGPU_NAME="Pool GPU"). */
#include <stdlib.h>
#include <string.h>

#include "sgtest.h"

static void test_configuration(void **state)
{
	int n, bus0, bus1;
	char name[64];
	size_t mem;
	CUuuid u0, u1;

	CK(cuInit(0));
	CK(cuDeviceGetCount(&n));
	assert_int_equal(n, 2);
	for (int d = 0; d < 2; d++) {
		CK(cuDeviceGetName(name, sizeof(name), d));
		assert_string_equal(name, "Pool GPU");
		CK(cuDeviceTotalMem(&mem, d));
		assert_int_equal(mem, 256u << 20);
	}
	CK(cuDeviceGetUuid(&u0, 0));
	CK(cuDeviceGetUuid(&u1, 1));
	assert_memory_not_equal(&u0, &u1, sizeof(u0));
	CK(cuDeviceGetAttribute(&bus0, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0));
	CK(cuDeviceGetAttribute(&bus1, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 1));
	assert_true(bus0 != bus1);
}

/* Each device has its own memory: a limit per device, kernels see only their own. */
static void test_two_devices(void **state)
{
	CUcontext c0, c1;
	CUdeviceptr p0, p1, big;
	size_t freeb, total;
	int v = 41, got = 0;
	CUmodule m0, m1;
	char *ptx = sgt_read("stream_ops.ptx", NULL);

	CK(cuDevicePrimaryCtxRetain(&c0, 0));
	CK(cuDevicePrimaryCtxRetain(&c1, 1));
	CK(cuCtxSetCurrent(c0));
	CK(cuModuleLoadData(&m0, ptx));
	CK(cuMemAlloc(&p0, 4));
	CK(cuMemcpyHtoD(p0, &v, 4));
	CK(cuMemAlloc(&big, 200u << 20));
	CK(cuCtxSetCurrent(c1));
	/* device 1's memory is untouched by device 0's allocations */
	CK(cuMemGetInfo(&freeb, &total));
	assert_true(freeb > (200u << 20));
	CK(cuMemAlloc(&p1, 4));
	CK(cuModuleLoadData(&m1, ptx));
	/* a peer copy moves the value across */
	CK(cuMemcpyPeer(p1, c1, p0, c0, 4));
	{
		CUfunction inc;
		void *args[] = {&p1};

		CK(cuModuleGetFunction(&inc, m1, "increment"));
		CK(cuLaunchKernel(inc, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
		CK(cuMemcpyDtoH(&got, p1, 4));
		assert_int_equal(got, 42);
		/* device 0's memory in a device 1 kernel: an illegal address */
		void *bad[] = {&p0};
		CK(cuLaunchKernel(inc, 1, 1, 1, 1, 1, 1, 0, NULL, bad, NULL));
		CK_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
	}
	/* device 0 is unaffected */
	CK(cuCtxSetCurrent(c0));
	CK(cuMemcpyDtoH(&got, p0, 4));
	assert_int_equal(got, 41);
	CK(cuMemFree(big));
	CK(cuDevicePrimaryCtxReset(1));
	CK(cuDevicePrimaryCtxRelease(1));
	CK(cuDevicePrimaryCtxRelease(0));
	free(ptx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_configuration),
		cmocka_unit_test(test_two_devices),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
