// video.cu -- the scalar video instructions as inline PTX: vadd vsub vabsdiff vmin vmax vshl vshr vset
// vmad, with byte/half-word selectors, .sat, secondary .add/.min/.max and the merge into a selected part.
// test_math.c's table lists the same forms in the same order.
extern "C" __global__ void video(const unsigned *in, unsigned *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	unsigned a = in[3 * i], b = in[3 * i + 1], c = in[3 * i + 2], *o = out + 24 * i;

	asm("vadd.u32.u32.u32 %0, %1, %2;" : "=r"(o[0]) : "r"(a), "r"(b));
	asm("vadd.s32.s32.s32.sat %0, %1, %2;" : "=r"(o[1]) : "r"(a), "r"(b));
	asm("vadd.s32.u32.s32.sat %0, %1.b0, %2.h1;" : "=r"(o[2]) : "r"(a), "r"(b));
	asm("vsub.u32.s32.u32.sat %0, %1.h1, %2.b2;" : "=r"(o[3]) : "r"(a), "r"(b));
	asm("vabsdiff.u32.s32.s32.add %0, %1.b3, %2.b1, %3;" : "=r"(o[4]) : "r"(a), "r"(b), "r"(c));
	asm("vmin.s32.s32.u32.max %0, %1, %2.h0, %3;" : "=r"(o[5]) : "r"(a), "r"(b), "r"(c));
	asm("vmax.u32.u32.s32.min %0, %1.h0, %2, %3;" : "=r"(o[6]) : "r"(a), "r"(b), "r"(c));
	asm("vadd.u32.u32.u32.sat %0.b1, %1.b2, %2.b3, %3;" : "=r"(o[7]) : "r"(a), "r"(b), "r"(c));
	asm("vsub.s32.s32.s32.sat %0.h1, %1.h0, %2.h1, %3;" : "=r"(o[8]) : "r"(a), "r"(b), "r"(c));
	asm("vabsdiff.s32.s32.s32 %0.b0, %1, %2, %3;" : "=r"(o[9]) : "r"(a), "r"(b), "r"(c));
	asm("vshl.u32.u32.u32.clamp %0, %1, %2.b0;" : "=r"(o[10]) : "r"(a), "r"(b));
	asm("vshl.s32.s32.u32.sat.clamp %0, %1.h0, %2.b0;" : "=r"(o[11]) : "r"(a), "r"(b));
	asm("vshr.s32.s32.u32.wrap %0, %1, %2;" : "=r"(o[12]) : "r"(a), "r"(b));
	asm("vshr.u32.s32.u32.clamp.add %0, %1.b3, %2.b1, %3;" : "=r"(o[13]) : "r"(a), "r"(b), "r"(c));
	asm("vset.s32.u32.lt %0, %1.b1, %2;" : "=r"(o[14]) : "r"(a), "r"(b));
	asm("vset.u32.u32.ne.add %0, %1.b0, %2.b0, %3;" : "=r"(o[15]) : "r"(a), "r"(b), "r"(c));
	asm("vset.s32.s32.ge %0.h1, %1.h1, %2.h0, %3;" : "=r"(o[16]) : "r"(a), "r"(b), "r"(c));
	asm("vmax.s32.s32.s32.sat %0, %1, %2;" : "=r"(o[17]) : "r"(a), "r"(b));
	asm("vmad.u32.u32.u32 %0, %1, %2, %3;" : "=r"(o[18]) : "r"(a), "r"(b), "r"(c));
	asm("vmad.s32.s32.s32.sat %0, %1.h0, %2.h1, %3;" : "=r"(o[19]) : "r"(a), "r"(b), "r"(c));
	asm("vmad.s32.u32.s32.shr7 %0, -%1.b0, %2.h0, %3;" : "=r"(o[20]) : "r"(a), "r"(b), "r"(c));
	asm("vmad.s32.u32.u32.sat %0, %1.h1, %2.b2, -%3;" : "=r"(o[21]) : "r"(a), "r"(b), "r"(c));
	asm("vmad.u32.u32.u32.po.shr15 %0, %1.h0, %2.h1, %3;" : "=r"(o[22]) : "r"(a), "r"(b), "r"(c));
	asm("vmad.s32.s32.u32.sat.shr15 %0, %1, -%2.b3, %3;" : "=r"(o[23]) : "r"(a), "r"(b), "r"(c));
}
