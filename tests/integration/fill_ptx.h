/* fill_ptx.h -- a kernel for the driver-API test programs: fill(p, v) stores v at
 * p[threadIdx.x]. */
#ifndef GP_TEST_FILL_PTX_H
#define GP_TEST_FILL_PTX_H

static const char fill_ptx[] = ".version 7.0\n"
			       ".target sm_52\n"
			       ".address_size 64\n"
			       ".visible .entry fill(.param .u64 p, .param .u32 v)\n"
			       "{\n"
			       "  .reg .u32 %r<3>;\n"
			       "  .reg .u64 %rd<4>;\n"
			       "  ld.param.u64 %rd1, [p];\n"
			       "  ld.param.u32 %r1, [v];\n"
			       "  cvta.to.global.u64 %rd1, %rd1;\n"
			       "  mov.u32 %r2, %tid.x;\n"
			       "  mul.wide.u32 %rd2, %r2, 4;\n"
			       "  add.u64 %rd3, %rd1, %rd2;\n"
			       "  st.global.u32 [%rd3], %r1;\n"
			       "  ret;\n"
			       "}\n";

#endif
