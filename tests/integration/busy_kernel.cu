// busy_kernel.cu -- a kernel that runs for a known time by the device's own timer (%globaltimer,
// nanoseconds), adding the time it ran to *total (the busy-time tests).
__device__ static unsigned long long now_ns(void)
{
	unsigned long long t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

extern "C" __global__ void tick(unsigned long long ns, unsigned long long *total)
{
	unsigned long long t0 = now_ns(), t;

	do
		t = now_ns();
	while (t - t0 < ns);
	*total += t - t0;
}
