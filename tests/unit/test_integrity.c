/* test_integrity.c -- cudart's integrity check: fixed answers, HMAC known answers, gathering. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "integrity.h"

/* ---- a fake library: two devices, and a way to make one callback fail ---- */

static const struct gp__integrity_device fake_devs[2] = {
	{{0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e,
	  0x1f},
	 0,
	 0x41,
	 0},
	{{0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae,
	  0xaf},
	 1,
	 0x81,
	 3},
};
static int fake_count = 2;
static CUresult fail_uuid = CUDA_SUCCESS;

static CUresult fake_primary_ctx(CUcontext *pctx, CUdevice dev)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult fake_current(CUcontext *pctx)
{
	*pctx = NULL;
	return CUDA_SUCCESS;
}

static CUresult fake_version(int *v)
{
	*v = 13000;
	return CUDA_SUCCESS;
}

static CUresult fake_count_fn(int *n)
{
	*n = fake_count;
	return CUDA_SUCCESS;
}

/* Device handles differ from ordinals, to check that the handle is what gets passed on. */
static CUresult fake_get(CUdevice *d, int ordinal)
{
	if (ordinal < 0 || ordinal >= 2)
		return CUDA_ERROR_INVALID_DEVICE;
	*d = 100 + ordinal;
	return CUDA_SUCCESS;
}

static CUresult fake_uuid(CUuuid *u, CUdevice d)
{
	if (fail_uuid != CUDA_SUCCESS)
		return fail_uuid;
	if (d < 100 || d > 101)
		return CUDA_ERROR_INVALID_DEVICE;
	memcpy(u->bytes, fake_devs[d - 100].uuid, 16);
	return CUDA_SUCCESS;
}

static CUresult fake_attr(int *pi, CUdevice_attribute a, CUdevice d)
{
	if (d < 100 || d > 101)
		return CUDA_ERROR_INVALID_DEVICE;
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
		*pi = fake_devs[d - 100].pci_domain;
		return CUDA_SUCCESS;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
		*pi = fake_devs[d - 100].pci_bus;
		return CUDA_SUCCESS;
	case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
		*pi = fake_devs[d - 100].pci_device;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

static const struct gp__cuda_host fake_host = {
	.primary_ctx = fake_primary_ctx,
	.ctx_get_current = fake_current,
	.driver_get_version = fake_version,
	.device_get_count = fake_count_fn,
	.device_get = fake_get,
	.device_get_uuid = fake_uuid,
	.device_get_attribute = fake_attr,
};

/* Stand-ins for the two tables; slot 1 of the integrity one is what gets hashed. */
static const void *const fake_cudart[13];
static const void *const fake_integrity[3] = {(const void *)(uintptr_t)24,
					      (const void *)(uintptr_t)0x1234567890};

static void expected_for_caller(uint32_t version, uint64_t secs, int ndevs, uint64_t out[2])
{
	struct gp__integrity_header hdr = {
		.driver_version = 13000,
		.version = version,
		.pid = (uint32_t)getpid(),
		.thread = (uint32_t)(uintptr_t)pthread_self(),
		.cudart_table = fake_cudart,
		.integrity_table = fake_integrity,
		.check_fn = fake_integrity[1],
		.unix_seconds = secs,
	};

	assert_int_equal(gp__integrity_answer(&hdr, fake_devs, (size_t)ndevs, out), 0);
}

static int reset(void **state)
{
	fake_count = 2;
	fail_uuid = CUDA_SUCCESS;
	return 0;
}

/* ---- invalid arguments ---- */

static void test_invalid_arguments(void **state)
{
	struct gp__integrity_header hdr = {.version = 13002};
	uint64_t out[2];

	assert_int_equal(gp__integrity_answer(NULL, NULL, 0, out), -EINVAL);
	assert_int_equal(gp__integrity_answer(&hdr, NULL, 0, NULL), -EINVAL);
	assert_int_equal(gp__integrity_answer(&hdr, NULL, 1, out), -EINVAL);
	assert_int_equal(gp__integrity_check(NULL, fake_cudart, fake_integrity, 13002, 0, out),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(gp__integrity_check(&fake_host, NULL, fake_integrity, 13002, 0, out),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(gp__integrity_check(&fake_host, fake_cudart, NULL, 13002, 0, out),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(
		gp__integrity_check(&fake_host, fake_cudart, fake_integrity, 13002, 0, NULL),
		CUDA_ERROR_INVALID_VALUE);
}

/* ---- the fixed answers ---- */

static void test_fixed_answers(void **state)
{
	static const uint32_t zero[] = {0, 10, 13000, 12090, 4294967290u};
	static const uint32_t one[] = {1, 11, 13001, 12091};
	uint64_t out[2];

	for (size_t i = 0; i < sizeof(zero) / sizeof(zero[0]); i++) {
		assert_true(gp__integrity_fixed(zero[i], out));
		assert_int_equal(out[0], 0x3341181C03CB675CULL);
		assert_int_equal(out[1], 0x8ED383AA1F4CD1E8ULL);
	}
	for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++) {
		assert_true(gp__integrity_fixed(one[i], out));
		assert_int_equal(out[0], 0x1841181C03CB675CULL);
		assert_int_equal(out[1], 0x8ED383AA1F4CD1E8ULL);
	}
	for (uint32_t v = 13002; v < 13010; v++)
		assert_false(gp__integrity_fixed(v, out));

	/* The gatherer answers them without asking the library anything. */
	out[0] = out[1] = 0;
	assert_int_equal(
		gp__integrity_check(&fake_host, fake_cudart, fake_integrity, 13001, 5, out),
		CUDA_SUCCESS);
	assert_int_equal(out[0], 0x1841181C03CB675CULL);
}

/* ---- the HMAC against tests/unit/ref_md2_hmac.py (little-endian x86-64) ---- */

static const struct gp__integrity_header kat_hdr = {
	.driver_version = 13000,
	.version = 13002,
	.pid = 4242,
	.thread = 0xDEADBEEF,
	.cudart_table = (const void *)(uintptr_t)0x7F0000001000,
	.integrity_table = (const void *)(uintptr_t)0x7F0000002000,
	.check_fn = (const void *)(uintptr_t)0x7F0000003456,
	.unix_seconds = 1700000000,
};

static const uint64_t kat[3][2] = {
	{0x1EBBDEC0BCBD568AULL, 0x8845F4D89958A57DULL}, /* no device */
	{0x472FBB28C858491DULL, 0x51F169B19AA515C6ULL}, /* device 0 */
	{0xC5195D80FCA8F6A7ULL, 0x8E39DA1C16E181E7ULL}, /* devices 0 and 1 */
};

static void test_known_answers(void **state)
{
	const uint16_t probe = 1;

	if (*(const uint8_t *)&probe != 1)
		skip(); /* the vectors were made for a little-endian host */
	for (size_t n = 0; n <= 2; n++) {
		struct gp__integrity ic;
		uint64_t out[2];

		assert_int_equal(gp__integrity_answer(&kat_hdr, fake_devs, n, out), 0);
		assert_int_equal(out[0], kat[n][0]);
		assert_int_equal(out[1], kat[n][1]);

		gp__integrity_begin(&ic, &kat_hdr);
		for (size_t i = 0; i < n; i++)
			gp__integrity_add_device(&ic, &fake_devs[i]);
		gp__integrity_end(&ic, out);
		assert_int_equal(out[0], kat[n][0]);
		assert_int_equal(out[1], kat[n][1]);
	}
}

/* Each input changes the answer. */
static void test_every_input_counts(void **state)
{
	uint64_t base[2], out[2];
	struct gp__integrity_header h;
	struct gp__integrity_device d[2];

	assert_int_equal(gp__integrity_answer(&kat_hdr, fake_devs, 2, base), 0);
#define CHANGED(stmt)                                                     \
	do {                                                              \
		h = kat_hdr;                                              \
		memcpy(d, fake_devs, sizeof(d));                          \
		stmt;                                                     \
		assert_int_equal(gp__integrity_answer(&h, d, 2, out), 0); \
		assert_false(out[0] == base[0] && out[1] == base[1]);     \
	} while (0)
	CHANGED(h.driver_version++);
	CHANGED(h.version = 13003);
	CHANGED(h.pid++);
	CHANGED(h.thread++);
	CHANGED(h.cudart_table = (const char *)h.cudart_table + 8);
	CHANGED(h.integrity_table = (const char *)h.integrity_table + 8);
	CHANGED(h.check_fn = (const char *)h.check_fn + 1);
	CHANGED(h.unix_seconds++);
	CHANGED(d[1].uuid[15] ^= 1);
	CHANGED(d[0].pci_domain++);
	CHANGED(d[0].pci_bus++);
	CHANGED(d[1].pci_device++);
#undef CHANGED
}

/* ---- gathering the inputs ---- */

static void test_check_gathers_inputs(void **state)
{
	uint64_t got[2], want[2];

	assert_int_equal(gp__integrity_check(&fake_host, fake_cudart, fake_integrity, 13002,
					     1700000000, got),
			 CUDA_SUCCESS);
	expected_for_caller(13002, 1700000000, 2, want);
	assert_memory_equal(got, want, sizeof(got));

	fake_count = 0;
	assert_int_equal(gp__integrity_check(&fake_host, fake_cudart, fake_integrity, 13002,
					     1700000000, got),
			 CUDA_SUCCESS);
	expected_for_caller(13002, 1700000000, 0, want);
	assert_memory_equal(got, want, sizeof(got));
}

struct thread_result {
	uint64_t got[2], want[2];
	CUresult r;
};

static void *other_thread(void *arg)
{
	struct thread_result *t = arg;

	t->r = gp__integrity_check(&fake_host, fake_cudart, fake_integrity, 13005, 99, t->got);
	expected_for_caller(13005, 99, 2, t->want);
	return NULL;
}

/* The thread id is the caller's: another thread gets another answer. */
static void test_check_uses_calling_thread(void **state)
{
	struct thread_result t;
	pthread_t th;
	uint64_t mine[2];

	assert_int_equal(pthread_create(&th, NULL, other_thread, &t), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(t.r, CUDA_SUCCESS);
	assert_memory_equal(t.got, t.want, sizeof(t.got));
	assert_int_equal(
		gp__integrity_check(&fake_host, fake_cudart, fake_integrity, 13005, 99, mine),
		CUDA_SUCCESS);
	assert_memory_not_equal(mine, t.got, sizeof(mine));
}

static void test_check_errors(void **state)
{
	uint64_t out[2] = {7, 7};

	fail_uuid = CUDA_ERROR_DEVICE_UNAVAILABLE;
	assert_int_equal(
		gp__integrity_check(&fake_host, fake_cudart, fake_integrity, 13002, 0, out),
		CUDA_ERROR_DEVICE_UNAVAILABLE);
	assert_int_equal(out[0], 7);
	assert_int_equal(out[1], 7);
	fail_uuid = CUDA_SUCCESS;

	fake_count = 3; /* more devices than cuDeviceGet knows */
	assert_int_equal(
		gp__integrity_check(&fake_host, fake_cudart, fake_integrity, 13002, 0, out),
		CUDA_ERROR_INVALID_DEVICE);
	fake_count = -1;
	assert_int_equal(
		gp__integrity_check(&fake_host, fake_cudart, fake_integrity, 13002, 0, out),
		CUDA_ERROR_UNKNOWN);
	assert_int_equal(out[0], 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_invalid_arguments, reset),
		cmocka_unit_test_setup(test_fixed_answers, reset),
		cmocka_unit_test_setup(test_known_answers, reset),
		cmocka_unit_test_setup(test_every_input_counts, reset),
		cmocka_unit_test_setup(test_check_gathers_inputs, reset),
		cmocka_unit_test_setup(test_check_uses_calling_thread, reset),
		cmocka_unit_test_setup(test_check_errors, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
