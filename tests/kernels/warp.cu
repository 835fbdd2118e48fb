// warp.cu -- warp-level operations: vote, ballot, shfl in all modes, match, activemask, syncwarp, lanemask.
extern "C" __global__ void warp_ops(const int *in, int *out)
{
	int t = threadIdx.x, lane = t & 31;
	int v = in[t];
	int *o = out + 12 * t;

	o[0] = __all_sync(0xffffffff, v > 0);
	o[1] = __any_sync(0xffffffff, v > 90);
	o[2] = (int)__ballot_sync(0xffffffff, v & 1);
	o[3] = __shfl_sync(0xffffffff, v, (lane * 7) & 31);
	o[4] = __shfl_up_sync(0xffffffff, v, 3);
	o[5] = __shfl_down_sync(0xffffffff, v, 5);
	o[6] = __shfl_xor_sync(0xffffffff, v, 6);
	o[7] = __shfl_sync(0xffffffff, v, lane + 1, 8); /* width 8 */
	o[8] = (int)__match_any_sync(0xffffffff, v % 4);
	int pred;
	o[9] = (int)__match_all_sync(0xffffffff, t / 32, &pred) + pred;
	o[10] = __uni_sync(0xffffffff, t < 64) ? 1 : 0;
	unsigned lt;
	asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
	o[11] = (int)lt;
}

/* Only the even lanes take part in the exchange; odd lanes take another path. */
extern "C" __global__ void warp_partial(int *out)
{
	int lane = threadIdx.x & 31;

	if (lane & 1) {
		out[threadIdx.x] = -1;
	} else {
		unsigned m = __activemask();
		int v = __shfl_down_sync(0x55555555, lane, 2);

		__syncwarp(0x55555555);
		out[threadIdx.x] = v * 1000 + (int)__popc(m);
	}
}

/*
 * Shuffles whose source lane takes no part (outside the member mask, or beyond the
 * block): 0, as NVIDIA's GPUs return. Lanes 0-7 of each warp exchange with mask 0xff;
 * the last block-level line is cuda-samples' reduce7 final-warp sum over 8 lanes.
 */
extern "C" __global__ void warp_outside(int *out)
{
	int lane = threadIdx.x & 31;
	int *o = out + 4 * threadIdx.x;

	if (lane < 8) {
		int v = lane + 1, s = v;

		o[0] = __shfl_down_sync(0xff, v, 16); /* lanes 16-23: outside the mask */
		o[1] = __shfl_down_sync(0xff, v, 4);  /* 0-3 read 4-7; 4-7 read 8-11 (outside) */
		o[2] = __shfl_down_sync(0xff, v, 30); /* 0-1 read 30-31 (outside); 2-7 out of range */
		for (int off = 16; off > 0; off /= 2)
			s += __shfl_down_sync(0xff, s, off);
		o[3] = s;
	} else {
		o[0] = o[1] = o[2] = o[3] = -1;
	}
}
