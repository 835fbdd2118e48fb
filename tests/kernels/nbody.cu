// nbody.cu -- all-pairs gravitational accelerations with rsqrtf and fmaf (f32 heavy).
extern "C" __global__ void nbody(const float4 *pos, float3 *acc, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	float4 p = pos[i];
	float3 a = make_float3(0.0f, 0.0f, 0.0f);

	for (int j = 0; j < n; j++) {
		float4 q = pos[j];
		float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
		float d2 = dx * dx + dy * dy + dz * dz + 0.01f;
		float inv = rsqrtf(d2);
		float s = q.w * inv * inv * inv;

		a.x += dx * s;
		a.y += dy * s;
		a.z += dz * s;
	}
	acc[i] = a;
}
