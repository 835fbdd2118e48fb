// asmops.cu -- instructions nvcc emits rarely, written as inline PTX: .ftz, .sat, approx math,
// testp, copysign, prmt modes, bfind, dp4a, lop3, shf.clamp, mul24, addc chains, selp/slct, set.
extern "C" __global__ void asmops(const float *fa, const unsigned *ua, float *fo, unsigned *uo, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	float x = fa[2 * i], y = fa[2 * i + 1];
	unsigned a = ua[2 * i], b = ua[2 * i + 1];
	float *f = fo + 12 * i;
	unsigned *u = uo + 16 * i;

	asm("add.ftz.f32 %0, %1, %2;" : "=f"(f[0]) : "f"(x), "f"(y));
	asm("mul.sat.f32 %0, %1, %2;" : "=f"(f[1]) : "f"(x), "f"(y));
	asm("fma.rn.ftz.sat.f32 %0, %1, %2, %1;" : "=f"(f[2]) : "f"(x), "f"(y));
	asm("ex2.approx.f32 %0, %1;" : "=f"(f[3]) : "f"(x));
	asm("lg2.approx.f32 %0, %1;" : "=f"(f[4]) : "f"(y));
	asm("rsqrt.approx.f32 %0, %1;" : "=f"(f[5]) : "f"(y));
	asm("sin.approx.ftz.f32 %0, %1;" : "=f"(f[6]) : "f"(x));
	asm("tanh.approx.f32 %0, %1;" : "=f"(f[7]) : "f"(x));
	asm("copysign.f32 %0, %1, %2;" : "=f"(f[8]) : "f"(x), "f"(y));
	asm("min.f32 %0, %1, %2;" : "=f"(f[9]) : "f"(x), "f"(y));
	asm("div.approx.f32 %0, %1, %2;" : "=f"(f[10]) : "f"(x), "f"(y));
	asm("cvt.rni.f32.f32 %0, %1;" : "=f"(f[11]) : "f"(x));
	asm("{ .reg .pred p; testp.subnormal.f32 p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(u[0]) : "f"(x));
	asm("prmt.b32.ecl %0, %1, %2, %3;" : "=r"(u[1]) : "r"(a), "r"(b), "r"(i));
	asm("bfind.s32 %0, %1;" : "=r"(u[2]) : "r"(a));
	asm("bfind.shiftamt.u32 %0, %1;" : "=r"(u[3]) : "r"(b));
	asm("dp4a.s32.u32 %0, %1, %2, %3;" : "=r"(u[4]) : "r"(a), "r"(b), "r"(i));
	asm("lop3.b32 %0, %1, %2, %3, 0xb4;" : "=r"(u[5]) : "r"(a), "r"(b), "r"(a ^ b));
	asm("shf.l.clamp.b32 %0, %1, %2, %3;" : "=r"(u[6]) : "r"(a), "r"(b), "r"(i));
	asm("mul24.lo.s32 %0, %1, %2;" : "=r"(u[7]) : "r"(a), "r"(b));
	asm("mul24.hi.u32 %0, %1, %2;" : "=r"(u[8]) : "r"(a), "r"(b));
	asm("{ .reg .u32 t; add.cc.u32 t, %1, %2; addc.u32 %0, %1, 0; }" : "=r"(u[9]) : "r"(a), "r"(b));
	asm("{ .reg .u32 t; sub.cc.u32 t, %1, %2; subc.u32 %0, 100, 0; }" : "=r"(u[10]) : "r"(a), "r"(b));
	asm("set.gt.u32.s32 %0, %1, %2;" : "=r"(u[11]) : "r"(a), "r"(b));
	asm("slct.u32.s32 %0, %1, %2, %3;" : "=r"(u[12]) : "r"(a), "r"(b), "r"(a - b));
	asm("bfe.s32 %0, %1, %2, 9;" : "=r"(u[13]) : "r"(a), "r"(i));
	asm("bfi.b32 %0, %1, %2, %3, 7;" : "=r"(u[14]) : "r"(a), "r"(b), "r"(i));
	asm("add.sat.s32 %0, %1, %2;" : "=r"(u[15]) : "r"(a), "r"(b));
}
