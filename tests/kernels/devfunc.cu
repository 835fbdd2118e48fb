// devfunc.cu -- non-inlined device functions, recursion, and a struct returned by value.
struct Pair {
	int a;
	float b;
};

__device__ __noinline__ Pair make_pair(int x)
{
	Pair p = {x * 2, x * 0.5f};
	return p;
}

__device__ __noinline__ int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__device__ __noinline__ float poly(float x, float a, float b, float c)
{
	return (a * x + b) * x + c;
}

extern "C" __global__ void devfunc(int *iout, float *fout)
{
	int t = threadIdx.x;
	Pair p = make_pair(t);

	iout[t] = p.a + fib(t % 12);
	fout[t] = poly((float)t, 1.5f, -2.0f, 0.25f) + p.b;
}
