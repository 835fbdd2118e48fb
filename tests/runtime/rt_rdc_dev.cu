// rt_rdc_dev.cu -- the device function rt_rdc.cu's kernel calls across translation units.
// twice<> is instantiated in both units: nvcc writes it into each as a .weak function.
template <class T> __noinline__ __device__ T twice(T x)
{
	return x * 2;
}

__device__ int rdc_mix(int x)
{
	return twice(x) + x + 7;
}
