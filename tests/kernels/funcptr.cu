// funcptr.cu -- function pointers and virtual functions in device code: a .global table of
// function addresses, vtables of classes made with device-side new, a pointer chosen in a
// register; and calls through bad pointers.
typedef float (*unary)(float);

__device__ __noinline__ float twice(float x) { return 2 * x; }
__device__ __noinline__ float square(float x) { return x * x; }
__device__ __noinline__ float negate(float x) { return -x; }

// a .global initializer holding function addresses
__device__ unary table[3] = {twice, square, negate};

extern "C" __global__ void call_table(const float *in, float *out, const int *which, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = table[which[i] % 3](in[i]);
}

struct shape {
	__device__ virtual float area() const = 0;
	__device__ virtual int sides() const { return 0; }
	__device__ virtual ~shape() {}
};
struct rect : shape {
	float w, h;
	__device__ rect(float w_, float h_) : w(w_), h(h_) {}
	__device__ float area() const override { return w * h; }
	__device__ int sides() const override { return 4; }
};
struct tri : shape {
	float b, h;
	__device__ tri(float b_, float h_) : b(b_), h(h_) {}
	__device__ float area() const override { return 0.5f * b * h; }
	__device__ int sides() const override { return 3; }
};

// virtual calls on objects made with device-side new in the same kernel
extern "C" __global__ void virtuals(const float *a, const float *b, float *area, int *sides, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	shape *s = (i & 1) ? (shape *)new tri(a[i], b[i]) : (shape *)new rect(a[i], b[i]);
	area[i] = s->area();
	sides[i] = s->sides();
	delete s;
}

// a function pointer passed as a kernel argument's worth: chosen at run time in a register
extern "C" __global__ void call_reg(const float *in, float *out, int n, int pick)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	unary f = pick == 0 ? twice : pick == 1 ? square : negate;

	if (i < n)
		out[i] = f(in[i]);
}

// Failures on purpose: a call through a value that is no function's address, and through a
// pointer whose prototype does not match the function it points to.
extern "C" __global__ void call_bad(float *out, unsigned long long p)
{
	out[threadIdx.x] = ((unary)p)(1.0f);
}

typedef int (*binop)(int, int);

extern "C" __global__ void call_mismatch(int *out)
{
	out[threadIdx.x] = ((binop)table[0])(1, 2);
}
