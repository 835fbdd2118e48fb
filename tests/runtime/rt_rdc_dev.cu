// rt_rdc_dev.cu -- the device function rt_rdc.cu's kernel calls across translation units.
__device__ int rdc_mix(int x)
{
	return x * 3 + 7;
}
