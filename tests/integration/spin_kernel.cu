// spin_kernel.cu -- a kernel that keeps one thread busy for a while (the idle-timeout test).
extern "C" __global__ void spin(long long n, long long *out)
{
	long long x = 0;

	for (long long i = 0; i < n; i++)
		x = x * 3 + i;
	*out = x;
}
