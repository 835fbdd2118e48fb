// structs.cu -- odd-sized and aligned parameters: chars, shorts, bools, structs by value, arrays in structs.
struct Odd {
	char c;
	double d;
	int v[3];
};

struct __align__(16) Vec {
	float x, y, z, w;
};

struct Packed {
	unsigned char bytes[7];
};

__global__ void params(char c, short s, bool flag, Odd odd, Packed p, Vec v, long long big,
		       unsigned char uc, double *out)
{
	out[0] = c;
	out[1] = s;
	out[2] = flag ? 1.0 : 0.0;
	out[3] = odd.c;
	out[4] = odd.d;
	out[5] = odd.v[0] + odd.v[1] * 10 + odd.v[2] * 100;
	double sum = 0;
	for (int i = 0; i < 7; i++)
		sum = sum * 2 + p.bytes[i];
	out[6] = sum;
	out[7] = v.x + v.y * 2 + v.z * 3 + v.w * 4;
	out[8] = (double)big;
	out[9] = uc;
}
