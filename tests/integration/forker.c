/* forker.c -- opens a session, allocates, forks a child that lingers, and exits: the
 * session must end with the parent, not live on in the child's copy of the socket. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cuda.h>

int main(int argc, char **argv)
{
	int linger = argc > 1 ? atoi(argv[1]) : 10;
	CUcontext ctx;
	CUdevice dev;
	CUdeviceptr d;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, NULL, 0, dev) ||
	    cuMemAlloc(&d, 1 << 20))
		return 1;
	if (fork() == 0) {
		/* CUDA does not work in a forked child; it must say so, not pretend. */
		CUresult r = cuMemAlloc(&d, 4096);

		printf("child: cuMemAlloc %s\n",
		       r == CUDA_SUCCESS ? "succeeded (wrong)" : "failed");
		fflush(stdout);
		/* Let go of the output so whoever reads it is not kept waiting. */
		freopen("/dev/null", "w", stdout);
		freopen("/dev/null", "w", stderr);
		sleep((unsigned)linger);
		_exit(r == CUDA_SUCCESS);
	}
	printf("parent: exiting\n");
	return 0;
}
