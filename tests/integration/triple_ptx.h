/* triple_ptx.h -- a kernel for the driver-API test programs: triple(p, n) makes
 * p[i] = p[i] * 3 + 1 for i < n, one thread each. */
#ifndef GP_TEST_TRIPLE_PTX_H
#define GP_TEST_TRIPLE_PTX_H

static const char triple_ptx[] = ".version 7.0\n"
				 ".target sm_52\n"
				 ".address_size 64\n"
				 ".visible .entry triple(.param .u64 p, .param .u32 n)\n"
				 "{\n"
				 "  .reg .pred %q;\n"
				 "  .reg .u32 %r<8>;\n"
				 "  .reg .u64 %rd<4>;\n"
				 "  ld.param.u64 %rd1, [p];\n"
				 "  ld.param.u32 %r1, [n];\n"
				 "  mov.u32 %r2, %ctaid.x;\n"
				 "  mov.u32 %r3, %ntid.x;\n"
				 "  mov.u32 %r4, %tid.x;\n"
				 "  mad.lo.u32 %r5, %r2, %r3, %r4;\n"
				 "  setp.ge.u32 %q, %r5, %r1;\n"
				 "  @%q bra DONE;\n"
				 "  cvta.to.global.u64 %rd1, %rd1;\n"
				 "  mul.wide.u32 %rd2, %r5, 4;\n"
				 "  add.u64 %rd3, %rd1, %rd2;\n"
				 "  ld.global.u32 %r6, [%rd3];\n"
				 "  mad.lo.u32 %r7, %r6, 3, 1;\n"
				 "  st.global.u32 [%rd3], %r7;\n"
				 "DONE:\n"
				 "  ret;\n"
				 "}\n";

#endif
