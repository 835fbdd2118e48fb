// atomics.cu -- every atomic: add (int, float, double), sub, exch, min, max, inc, dec, and, or, xor, CAS.
extern "C" __global__ void atomics(int *iv, unsigned *uv, float *fv, double *dv,
				   unsigned long long *lv, int *flags)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;

	atomicAdd(&iv[0], t);
	atomicSub(&iv[1], 2);
	atomicMin(&iv[2], 1000 - t);
	atomicMax(&iv[3], t * 3);
	atomicAnd(&uv[0], ~(1u << (t & 31)));
	atomicOr(&uv[1], 1u << (t & 31));
	atomicXor(&uv[2], (unsigned)t);
	atomicInc(&uv[3], 16u);
	atomicDec(&uv[4], 7u);
	atomicAdd(&fv[0], 0.5f);
	atomicAdd(&dv[0], 0.25);
	atomicAdd(&lv[0], (unsigned long long)t);
	atomicMax(&lv[1], (unsigned long long)t << 33);
	/* a CAS loop: each thread claims a distinct slot */
	int old = atomicExch(&flags[t], 1);
	flags[1024 + t] = old;
	int slot;
	do {
		slot = iv[4];
	} while (atomicCAS(&iv[4], slot, slot + 1) != slot);
	flags[2048 + slot] = t + 1;
}
