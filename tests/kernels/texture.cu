// texture.cu -- a surface reduction (sured), which softgpu does not implement: the kernel must
// fail on first use, naming the instruction and its line (softgpu implements tex, tld4, txq,
// suld, sust and suq; tests/runtime/rt_texture*.cu).
extern "C" __global__ void tex_read(cudaSurfaceObject_t s, unsigned v)
{
	asm volatile("sured.b.add.2d.u32.trap [%0, {%1, %2}], %3;"
		     :
		     : "l"(s), "r"(threadIdx.x * 4), "r"(0), "r"(v)
		     : "memory");
}
