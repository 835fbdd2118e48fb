/* link.c -- JIT linking (cuLink*): two PTX texts, one calling an .extern function the other
 * defines, linked (cuLinkAddData twice, and cuLinkAddFile), loaded as a module and as a
 * library, launched and checked against the CPU; an unresolved and a twice-defined function
 * fail naming the function. Each text also has a file-local helper of the same name, which
 * must stay its own, and the same .weak function and variable, kept once.
 * usage: link [pool]   (through the pool a link error surfaces at the load of the image) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#define CHECK(cond, what)                             \
	do {                                          \
		if (!(cond)) {                        \
			printf("FAILED: %s\n", what); \
			return 1;                     \
		}                                     \
	} while (0)

/* What both texts define .weak, identically: a variable and a function that adds it. */
#define WEAK_PART                                                                      \
	".weak .global .align 4 .b32 bias = 0;\n"                                      \
	".weak .func (.param .b32 r) same(.param .b32 x)\n"                            \
	"{\n .reg .b32 %a<3>;\n ld.param.b32 %a1, [x];\n ld.global.u32 %a2, [bias];\n" \
	" add.s32 %a1, %a1, %a2;\n st.param.b32 [r], %a1;\n ret;\n}\n"

/* out[i] = same(local_one(in[i]) + twice_plus(in[i])); here local_one(x) = x + 1 */
static const char ptx_main[] =
	".version 7.0\n.target sm_52\n.address_size 64\n"
	".extern .func (.param .b32 r) twice_plus(.param .b32 x);\n" WEAK_PART
	".func (.param .b32 r) local_one(.param .b32 x)\n"
	"{\n .reg .b32 %a;\n ld.param.b32 %a, [x];\n add.s32 %a, %a, 1;\n"
	" st.param.b32 [r], %a;\n ret;\n}\n"
	".visible .entry combine(.param .u64 pin, .param .u64 pout, .param .u32 n)\n"
	"{\n .reg .b32 %r<8>;\n .reg .b64 %rd<6>;\n .reg .pred %p;\n"
	" ld.param.u64 %rd1, [pin];\n ld.param.u64 %rd2, [pout];\n ld.param.u32 %r1, [n];\n"
	" mov.u32 %r2, %tid.x;\n mov.u32 %r3, %ctaid.x;\n mov.u32 %r4, %ntid.x;\n"
	" mad.lo.s32 %r2, %r3, %r4, %r2;\n setp.ge.u32 %p, %r2, %r1;\n @%p bra DONE;\n"
	" cvta.to.global.u64 %rd1, %rd1;\n cvta.to.global.u64 %rd2, %rd2;\n"
	" mul.wide.u32 %rd3, %r2, 4;\n add.s64 %rd4, %rd1, %rd3;\n ld.global.u32 %r5, [%rd4];\n"
	" {\n .param .b32 param0;\n st.param.b32 [param0], %r5;\n .param .b32 retval0;\n"
	" call.uni (retval0), local_one, (param0);\n ld.param.b32 %r6, [retval0];\n }\n"
	" {\n .param .b32 param1;\n st.param.b32 [param1], %r5;\n .param .b32 retval1;\n"
	" call.uni (retval1), twice_plus, (param1);\n ld.param.b32 %r7, [retval1];\n }\n"
	" add.s32 %r6, %r6, %r7;\n"
	" {\n .param .b32 param2;\n st.param.b32 [param2], %r6;\n .param .b32 retval2;\n"
	" call.uni (retval2), same, (param2);\n ld.param.b32 %r6, [retval2];\n }\n"
	" add.s64 %rd5, %rd2, %rd3;\n st.global.u32 [%rd5], %r6;\n"
	"DONE:\n ret;\n}\n";

/* twice_plus(x) = same(2 * local_one(x)), this text's local_one(x) = x + 100 */
static const char ptx_lib[] = ".version 7.0\n.target sm_52\n.address_size 64\n" WEAK_PART
			      ".func (.param .b32 r) local_one(.param .b32 x)\n"
			      "{\n .reg .b32 %a;\n ld.param.b32 %a, [x];\n add.s32 %a, %a, 100;\n"
			      " st.param.b32 [r], %a;\n ret;\n}\n"
			      ".visible .func (.param .b32 r) twice_plus(.param .b32 x)\n"
			      "{\n .reg .b32 %a<3>;\n ld.param.b32 %a1, [x];\n"
			      " {\n .param .b32 p0;\n st.param.b32 [p0], %a1;\n .param .b32 q0;\n"
			      " call.uni (q0), local_one, (p0);\n ld.param.b32 %a2, [q0];\n }\n"
			      " shl.b32 %a2, %a2, 1;\n"
			      " {\n .param .b32 p1;\n st.param.b32 [p1], %a2;\n .param .b32 q1;\n"
			      " call.uni (q1), same, (p1);\n ld.param.b32 %a2, [q1];\n }\n"
			      " st.param.b32 [r], %a2;\n ret;\n}\n";

#define N 1000

/* the value of bias, as the test set it */
static int bias;

static int expect(int x)
{
	return (x + 1) + 2 * (x + 100) + 2 * bias;
}

/* Launches combine from f on N inputs and compares with the CPU. */
static int run_combine(CUfunction f, const char *what)
{
	static int in[N], out[N];
	CUdeviceptr din, dout;
	unsigned n = N;
	void *args[] = {&din, &dout, &n};

	for (int i = 0; i < N; i++)
		in[i] = i * 7 - 300;
	CHECK(cuMemAlloc(&din, sizeof(in)) == CUDA_SUCCESS, "cuMemAlloc");
	CHECK(cuMemAlloc(&dout, sizeof(out)) == CUDA_SUCCESS, "cuMemAlloc");
	CHECK(cuMemcpyHtoD(din, in, sizeof(in)) == CUDA_SUCCESS, "cuMemcpyHtoD");
	CHECK(cuLaunchKernel(f, (N + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, args, NULL) ==
		      CUDA_SUCCESS,
	      "cuLaunchKernel");
	CHECK(cuMemcpyDtoH(out, dout, sizeof(out)) == CUDA_SUCCESS, "cuMemcpyDtoH");
	for (int i = 0; i < N; i++) {
		if (out[i] != expect(in[i])) {
			printf("FAILED: %s: out[%d] = %d, expected %d\n", what, i, out[i],
			       expect(in[i]));
			return 1;
		}
	}
	cuMemFree(din);
	cuMemFree(dout);
	printf("%s: %d results match the CPU\n", what, N);
	return 0;
}

/*
 * Links the given inputs with an error log. On the pool the link itself succeeds and the
 * error surfaces at the load; directly, at cuLinkComplete. Either way the failure is
 * reported and (directly) the log names `symbol`.
 */
static int link_fails(const char *const *texts, int n, const char *symbol, int pool)
{
	char log[1024] = "";
	CUjit_option o[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
	void *ov[] = {log, (void *)sizeof(log)};
	CUlinkState ls;
	void *img = NULL;
	size_t size = 0;
	CUmodule mod;
	CUresult r;

	CHECK(cuLinkCreate(2, o, ov, &ls) == CUDA_SUCCESS, "cuLinkCreate");
	for (int i = 0; i < n; i++)
		CHECK(cuLinkAddData(ls, CU_JIT_INPUT_PTX, (void *)texts[i], strlen(texts[i]) + 1,
				    i == 0   ? "main.ptx"
				    : i == 1 ? "lib.ptx"
					     : "lib-again.ptx",
				    0, NULL, NULL) == CUDA_SUCCESS,
		      "cuLinkAddData");
	r = cuLinkComplete(ls, &img, &size);
	if (pool) {
		CHECK(r == CUDA_SUCCESS, "through the pool cuLinkComplete collects the inputs");
		r = cuModuleLoadData(&mod, img);
		CHECK(r != CUDA_SUCCESS, "the load of a bad link fails");
	} else {
		CHECK(r != CUDA_SUCCESS, "cuLinkComplete of a bad link fails");
		CHECK((size_t)ov[1] == strlen(log) + 1, "the log's size is written");
		CHECK(strstr(log, symbol) != NULL, "the error log names the symbol");
	}
	printf("bad link (%s): error %d, log: %s\n", symbol, (int)r, log);
	CHECK(cuLinkDestroy(ls) == CUDA_SUCCESS, "cuLinkDestroy");
	return 0;
}

/*
 * A link bundle made by hand (docs/protocol.md, "Link bundles"): one entry of `type` holding
 * len bytes of data; `slack` extra bytes claimed by the total that no entry fills.
 */
static size_t make_bundle(unsigned char *b, unsigned type, const void *data, size_t len,
			  unsigned slack)
{
	unsigned magic = 0x4B4E4C47u, count = 1, zero = 0, name_len = 4;
	unsigned short version = 1, hs = 24;
	unsigned long long data_len = len, total;
	size_t off = 24;

	memcpy(b + off, &type, 4);
	memcpy(b + off + 4, &name_len, 4);
	memcpy(b + off + 8, &data_len, 8);
	memcpy(b + off + 16, "bad", 4);
	memcpy(b + off + 20, data, len);
	total = off + 20 + len + slack;
	memset(b + off + 20 + len, 0, slack);
	memcpy(b, &magic, 4);
	memcpy(b + 4, &version, 2);
	memcpy(b + 6, &hs, 2);
	memcpy(b + 8, &count, 4);
	memcpy(b + 12, &zero, 4);
	memcpy(b + 16, &total, 8);
	return (size_t)total;
}

int main(int argc, char **argv)
{
	int pool = argc > 1 && strcmp(argv[1], "pool") == 0;
	char info[256], err[256], path[] = "/tmp/gp-link-XXXXXX";
	CUjit_option o[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
			    CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
			    CU_JIT_WALL_TIME};
	void *ov[] = {info, (void *)sizeof(info), err, (void *)sizeof(err), NULL};
	CUlinkState ls;
	CUcontext ctx;
	CUdevice dev;
	CUmodule mod;
	CUlibrary lib;
	CUkernel k;
	CUfunction f;
	void *img = NULL;
	size_t size = 0;
	float ms = -1;
	int fd;

	CHECK(cuInit(0) == CUDA_SUCCESS && cuDeviceGet(&dev, 0) == CUDA_SUCCESS, "cuInit");
	CHECK(cuCtxCreate(&ctx, NULL, 0, dev) == CUDA_SUCCESS, "cuCtxCreate");

	/* invalid arguments first */
	CHECK(cuLinkCreate(0, NULL, NULL, NULL) == CUDA_ERROR_INVALID_VALUE, "NULL stateOut");
	CHECK(cuLinkCreate(0, NULL, NULL, &ls) == CUDA_SUCCESS, "cuLinkCreate without options");
	CHECK(cuLinkAddData(ls, CU_JIT_INPUT_PTX, NULL, 1, "x", 0, NULL, NULL) ==
		      CUDA_ERROR_INVALID_VALUE,
	      "NULL data");
	CHECK(cuLinkAddFile(ls, CU_JIT_INPUT_PTX, "/nonexistent/x.ptx", 0, NULL, NULL) ==
		      CUDA_ERROR_FILE_NOT_FOUND,
	      "a missing file");
	CHECK(cuLinkComplete(ls, NULL, &size) == CUDA_ERROR_INVALID_VALUE, "NULL cubinOut");
	CHECK(cuLinkDestroy(ls) == CUDA_SUCCESS, "cuLinkDestroy");
	CHECK(cuLinkDestroy(NULL) == CUDA_ERROR_INVALID_HANDLE, "NULL state");

	/* two texts by cuLinkAddData, the options' outputs filled in */
	memset(info, 'x', sizeof(info));
	memset(err, 'x', sizeof(err));
	CHECK(cuLinkCreate(5, o, ov, &ls) == CUDA_SUCCESS, "cuLinkCreate");
	CHECK(cuLinkAddData(ls, CU_JIT_INPUT_PTX, (void *)ptx_main, sizeof(ptx_main), "main.ptx", 0,
			    NULL, NULL) == CUDA_SUCCESS,
	      "cuLinkAddData main");
	CHECK(cuLinkAddData(ls, CU_JIT_INPUT_PTX, (void *)ptx_lib, sizeof(ptx_lib), "lib.ptx", 0,
			    NULL, NULL) == CUDA_SUCCESS,
	      "cuLinkAddData lib");
	CHECK(cuLinkComplete(ls, &img, &size) == CUDA_SUCCESS && img && size > 0, "cuLinkComplete");
	memcpy(&ms, &ov[4], sizeof(ms));
	CHECK(memchr(info, 0, sizeof(info)) && (size_t)ov[1] == strlen(info) + 1 &&
		      memchr(err, 0, sizeof(err)) && (size_t)ov[3] == strlen(err) + 1 && ms >= 0,
	      "the link's JIT outputs");
	CHECK(cuModuleLoadData(&mod, img) == CUDA_SUCCESS, "cuModuleLoadData of the link");
	CHECK(cuModuleGetFunction(&f, mod, "combine") == CUDA_SUCCESS, "its kernel");
	if (run_combine(f, "module from cuLinkAddData x2"))
		return 1;
	{
		/* one bias for both texts: the .weak variable is kept once */
		CUdeviceptr d;
		size_t sz = 0;

		bias = 10;
		CHECK(cuModuleGetGlobal(&d, &sz, mod, "bias") == CUDA_SUCCESS && sz == 4,
		      "cuModuleGetGlobal of the .weak variable");
		CHECK(cuMemcpyHtoD(d, &bias, sizeof(bias)) == CUDA_SUCCESS, "cuMemcpyHtoD");
		if (run_combine(f, "the same with bias 10"))
			return 1;
		bias = 0;
	}
	CHECK(cuModuleUnload(mod) == CUDA_SUCCESS, "cuModuleUnload");
	/* the image is the link state's until destroy: a library of it works as well */
	CHECK(cuLibraryLoadData(&lib, img, NULL, NULL, 0, NULL, NULL, 0) == CUDA_SUCCESS,
	      "cuLibraryLoadData of the link");
	CHECK(cuLibraryGetKernel(&k, lib, "combine") == CUDA_SUCCESS, "its kernel");
	if (run_combine((CUfunction)k, "library from the same link"))
		return 1;
	CHECK(cuLibraryUnload(lib) == CUDA_SUCCESS, "cuLibraryUnload");
	CHECK(cuLinkDestroy(ls) == CUDA_SUCCESS, "cuLinkDestroy");

	/* the second text from a file, read where the program runs */
	fd = mkstemp(path);
	CHECK(fd >= 0 && write(fd, ptx_lib, strlen(ptx_lib)) == (ssize_t)strlen(ptx_lib),
	      "a PTX file");
	close(fd);
	CHECK(cuLinkCreate(0, NULL, NULL, &ls) == CUDA_SUCCESS, "cuLinkCreate");
	CHECK(cuLinkAddData(ls, CU_JIT_INPUT_PTX, (void *)ptx_main, sizeof(ptx_main), "main.ptx", 0,
			    NULL, NULL) == CUDA_SUCCESS,
	      "cuLinkAddData main");
	CHECK(cuLinkAddFile(ls, CU_JIT_INPUT_PTX, path, 0, NULL, NULL) == CUDA_SUCCESS,
	      "cuLinkAddFile lib");
	unlink(path);
	CHECK(cuLinkComplete(ls, &img, &size) == CUDA_SUCCESS, "cuLinkComplete");
	CHECK(cuModuleLoadDataEx(&mod, img, 0, NULL, NULL) == CUDA_SUCCESS,
	      "cuModuleLoadDataEx of the link");
	CHECK(cuModuleGetFunction(&f, mod, "combine") == CUDA_SUCCESS, "its kernel");
	if (run_combine(f, "module from cuLinkAddData + cuLinkAddFile"))
		return 1;
	CHECK(cuModuleUnload(mod) == CUDA_SUCCESS, "cuModuleUnload");
	CHECK(cuLinkDestroy(ls) == CUDA_SUCCESS, "cuLinkDestroy");

	/* an earlier link's output as an input: its texts join this link */
	{
		CUlinkState first;
		void *part = NULL;
		size_t part_size = 0;

		CHECK(cuLinkCreate(0, NULL, NULL, &first) == CUDA_SUCCESS, "cuLinkCreate");
		CHECK(cuLinkAddData(first, CU_JIT_INPUT_PTX, (void *)ptx_lib, sizeof(ptx_lib),
				    "lib.ptx", 0, NULL, NULL) == CUDA_SUCCESS,
		      "cuLinkAddData lib");
		CHECK(cuLinkComplete(first, &part, &part_size) == CUDA_SUCCESS && part_size > 0,
		      "cuLinkComplete of the part");
		CHECK(cuLinkCreate(0, NULL, NULL, &ls) == CUDA_SUCCESS, "cuLinkCreate");
		CHECK(cuLinkAddData(ls, CU_JIT_INPUT_PTX, (void *)ptx_main, sizeof(ptx_main),
				    "main.ptx", 0, NULL, NULL) == CUDA_SUCCESS,
		      "cuLinkAddData main");
		CHECK(cuLinkAddData(ls, CU_JIT_INPUT_CUBIN, part, part_size, "part", 0, NULL,
				    NULL) == CUDA_SUCCESS,
		      "cuLinkAddData of a link's output");
		CHECK(cuLinkDestroy(first) == CUDA_SUCCESS, "cuLinkDestroy of the part");
		CHECK(cuLinkComplete(ls, &img, &size) == CUDA_SUCCESS, "cuLinkComplete");
		CHECK(cuModuleLoadData(&mod, img) == CUDA_SUCCESS, "cuModuleLoadData");
		CHECK(cuModuleGetFunction(&f, mod, "combine") == CUDA_SUCCESS, "its kernel");
		if (run_combine(f, "module from a PTX text and a link's output"))
			return 1;
		CHECK(cuModuleUnload(mod) == CUDA_SUCCESS, "cuModuleUnload");
		CHECK(cuLinkDestroy(ls) == CUDA_SUCCESS, "cuLinkDestroy");
	}

	/* what cannot link */
	{
		const char *alone[] = {ptx_main};
		const char *twice[] = {ptx_main, ptx_lib, ptx_lib};

		if (link_fails(alone, 1, "twice_plus", pool) ||
		    link_fails(twice, 3, "twice_plus", pool))
			return 1;
	}
	{
		/* malformed bundles fail their load, never crash it */
		static unsigned char b[sizeof(ptx_lib) + 128];
		/* a fatbin header that claims 4096 bytes after it, with none there */
		static const unsigned char fat[16] = {0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0, 0, 0x10};

		make_bundle(b, CU_JIT_INPUT_PTX, ptx_lib, sizeof(ptx_lib), 0);
		CHECK(cuModuleLoadData(&mod, b) == CUDA_SUCCESS, "a hand-made bundle loads");
		CHECK(cuModuleUnload(mod) == CUDA_SUCCESS, "cuModuleUnload");
		make_bundle(b, 99, ptx_lib, sizeof(ptx_lib), 0);
		CHECK(cuModuleLoadData(&mod, b) != CUDA_SUCCESS, "a bundle entry of no known type");
		make_bundle(b, CU_JIT_INPUT_FATBINARY, fat, sizeof(fat), 0);
		CHECK(cuModuleLoadData(&mod, b) == CUDA_ERROR_INVALID_IMAGE,
		      "a fatbin entry that claims more than it holds");
		make_bundle(b, CU_JIT_INPUT_PTX, ptx_lib, sizeof(ptx_lib), 16);
		CHECK(cuModuleLoadData(&mod, b) == CUDA_ERROR_INVALID_IMAGE,
		      "a bundle whose total the entries do not fill");
		make_bundle(b, CU_JIT_INPUT_PTX, ptx_lib, sizeof(ptx_lib), 0);
		b[24 + 8] = 0xff; /* the entry claims more bytes than the bundle has */
		CHECK(cuModuleLoadData(&mod, b) == CUDA_ERROR_INVALID_IMAGE,
		      "a bundle entry past the total");
	}
	CHECK(cuLinkCreate(0, NULL, NULL, &ls) == CUDA_SUCCESS, "cuLinkCreate");
	CHECK(cuLinkAddData(ls, CU_JIT_INPUT_NVVM, (void *)ptx_lib, sizeof(ptx_lib), "x", 0, NULL,
			    NULL) != CUDA_SUCCESS,
	      "an input type that cannot be linked");
	if (!pool)
		CHECK(cuLinkAddData(ls, CU_JIT_INPUT_PTX, "not ptx", 8, "bad", 0, NULL, NULL) ==
			      CUDA_ERROR_INVALID_PTX,
		      "bad PTX fails at its cuLinkAddData");
	CHECK(cuLinkDestroy(ls) == CUDA_SUCCESS, "cuLinkDestroy");
	cuCtxDestroy(ctx);
	printf("link: OK\n");
	return 0;
}
