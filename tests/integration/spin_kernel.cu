// spin_kernel.cu -- a kernel that keeps one thread busy for a while (the idle-timeout test).
extern "C" __global__ void spin(long long n, long long *out)
{
	long long x = 0;

	for (long long i = 0; i < n; i++)
		x = x * 3 + i;
	*out = x;
}

// Busy for at least ns nanoseconds of the device's global timer, however fast the device
// runs: out[0] gets the nanoseconds it saw pass, out[1] the loops it made.
extern "C" __global__ void spin_for(long long ns, long long *out)
{
	unsigned long long start, now;
	long long loops = 0;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
	do {
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
		loops++;
	} while ((long long)(now - start) < ns);
	out[0] = (long long)(now - start);
	out[1] = loops;
}
