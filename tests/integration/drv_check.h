/* drv_check.h -- for the driver-API test programs that talk with the test script: a call's
 * result checked (ERROR and the line on stdout, for the script to report), and a step that
 * says where the program is and waits for the script's go-ahead. */
#ifndef GP_TEST_DRV_CHECK_H
#define GP_TEST_DRV_CHECK_H

#include <stdio.h>

#include <cuda.h>

#define CHECK(call, want)                                                                   \
	do {                                                                                \
		CUresult r_ = (call);                                                       \
		if (r_ != (want)) {                                                         \
			const char *n_ = NULL;                                              \
			cuGetErrorName(r_, &n_);                                            \
			printf("ERROR %s: %s (line %d)\n", #call, n_ ? n_ : "?", __LINE__); \
			return 1;                                                           \
		}                                                                           \
	} while (0)
#define OK(call) CHECK(call, CUDA_SUCCESS)

/* Says `say` on a line of its own, then waits for a line on stdin. */
static inline void step(const char *say)
{
	char line[64];

	printf("%s\n", say);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = '\0';
}

#endif
