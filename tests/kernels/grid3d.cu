// grid3d.cu -- 3-D grids and blocks: every index special register, written per thread.
extern "C" __global__ void grid3d(unsigned *out)
{
	unsigned bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
	unsigned nb = blockDim.x * blockDim.y * blockDim.z;
	unsigned tx = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
	unsigned g = bx * nb + tx;
	unsigned lane;

	asm("mov.u32 %0, %%laneid;" : "=r"(lane));
	out[4 * g + 0] = threadIdx.x | threadIdx.y << 8 | threadIdx.z << 16;
	out[4 * g + 1] = blockIdx.x | blockIdx.y << 8 | blockIdx.z << 16;
	out[4 * g + 2] = blockDim.x | blockDim.y << 8 | blockDim.z << 16 | gridDim.x << 24;
	out[4 * g + 3] = lane | gridDim.y << 8 | gridDim.z << 16;
}
