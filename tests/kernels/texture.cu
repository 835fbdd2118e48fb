// texture.cu -- a texture fetch: softgpu has no texture units, so this module must fail to load.
extern "C" __global__ void tex_read(cudaTextureObject_t t, float *out)
{
	out[threadIdx.x] = tex1Dfetch<float>(t, threadIdx.x);
}
