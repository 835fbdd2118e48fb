/* test_visible.c -- CUDA_VISIBLE_DEVICES over SOFTGPU_DEVICES=3. cuInit reads the
 * environment once per process, so each case runs in a child process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sgtest.h"

struct seen {
	int count;
	int bus[3];
	CUuuid uuid[3];
	CUresult init;
};

/* What a fresh process sees with CUDA_VISIBLE_DEVICES=vis (NULL: unset). */
static struct seen look(const char *vis)
{
	struct seen s;
	int fd[2];
	pid_t pid;

	memset(&s, 0, sizeof(s));
	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fd[0]);
		setenv("SOFTGPU_DEVICES", "3", 1);
		setenv("SOFTGPU_MEMORY", "64M", 1);
		if (vis)
			setenv("CUDA_VISIBLE_DEVICES", vis, 1);
		else
			unsetenv("CUDA_VISIBLE_DEVICES");
		s.init = cuInit(0);
		if (s.init == CUDA_SUCCESS && cuDeviceGetCount(&s.count) == CUDA_SUCCESS)
			for (int d = 0; d < s.count && d < 3; d++) {
				cuDeviceGetAttribute(&s.bus[d], CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d);
				cuDeviceGetUuid(&s.uuid[d], d);
			}
		if (write(fd[1], &s, sizeof(s)) != (ssize_t)sizeof(s))
			_exit(1);
		_exit(0);
	}
	close(fd[1]);
	assert_int_equal(read(fd[0], &s, sizeof(s)), (ssize_t)sizeof(s));
	close(fd[0]);
	waitpid(pid, NULL, 0);
	return s;
}

static void uuid_text(const CUuuid *u, char *out, size_t len, int nbytes)
{
	const unsigned char *b = (const unsigned char *)u->bytes;
	size_t n = (size_t)snprintf(out, len, "GPU-");

	for (int i = 0; i < nbytes; i++) {
		n += (size_t)snprintf(out + n, len - n, "%02x", b[i]);
		if (i == 3 || i == 5 || i == 7 || i == 9)
			n += (size_t)snprintf(out + n, len - n, "-");
	}
}

static void test_visible(void **state)
{
	struct seen all = look(NULL), s;
	char spec[128], u[64];

	(void)state;
	assert_int_equal(all.init, CUDA_SUCCESS);
	assert_int_equal(all.count, 3);

	/* indices, in the order given; ordinals renumbered, identity kept */
	s = look("2,0");
	assert_int_equal(s.count, 2);
	assert_int_equal(s.bus[0], all.bus[2]);
	assert_int_equal(s.bus[1], all.bus[0]);
	assert_memory_equal(&s.uuid[0], &all.uuid[2], sizeof(CUuuid));
	assert_memory_equal(&s.uuid[1], &all.uuid[0], sizeof(CUuuid));

	/* an entry naming no device ends the list */
	s = look("1,7,0");
	assert_int_equal(s.count, 1);
	assert_int_equal(s.bus[0], all.bus[1]);
	s = look("1,1");
	assert_int_equal(s.count, 1);

	/* full UUIDs and unique prefixes */
	uuid_text(&all.uuid[1], u, sizeof(u), 16);
	snprintf(spec, sizeof(spec), "%s", u);
	s = look(spec);
	assert_int_equal(s.count, 1);
	assert_memory_equal(&s.uuid[0], &all.uuid[1], sizeof(CUuuid));
	uuid_text(&all.uuid[2], u, sizeof(u), 6);
	snprintf(spec, sizeof(spec), "%s,0", u);
	s = look(spec);
	assert_int_equal(s.count, 2);
	assert_memory_equal(&s.uuid[0], &all.uuid[2], sizeof(CUuuid));
	assert_memory_equal(&s.uuid[1], &all.uuid[0], sizeof(CUuuid));

	/* nothing visible */
	s = look("");
	assert_int_equal(s.init, CUDA_ERROR_NO_DEVICE);
	s = look("5");
	assert_int_equal(s.init, CUDA_ERROR_NO_DEVICE);
	s = look("GPU-ffffffff-0000");
	assert_int_equal(s.init, CUDA_ERROR_NO_DEVICE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_visible),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
