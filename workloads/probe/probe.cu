// Probe: three small kernels to learn what a report holds (sections, metric names, source correlation).
#include <cstdio>
#include <cuda_runtime.h>
#define CK(x) do{cudaError_t e=(x); if(e!=cudaSuccess){printf("CUDA %s line %d\n",cudaGetErrorString(e),__LINE__); return 1;}}while(0)

__global__ void copy_vec4(const float4* __restrict__ in, float4* __restrict__ out, size_t n4) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n4) out[i] = in[i];
}
__global__ void copy_strided(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < (size_t)rows * cols) {
    size_t r = i % rows, c = i / rows;   // consecutive threads walk down a column: stride = cols floats
    out[i] = in[r * cols + c];
  }
}
__global__ void transpose_conflict(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float tile[32][32];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * n + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) out[(size_t)(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}
__global__ void fma_loop(float* __restrict__ a, int iters) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  float x = a[i], y = x * 0.5f;
  for (int k = 0; k < iters; ++k) { x = fmaf(x, 0.9999f, y); y = fmaf(y, 0.9999f, x); }
  a[i] = x + y;
}
int main() {
  const int n = 8192; size_t N = (size_t)n * n;   // 64M floats = 256 MB
  float *a, *b; CK(cudaMalloc(&a, N * 4)); CK(cudaMalloc(&b, N * 4));
  CK(cudaMemset(a, 0x3f, N * 4));
  copy_vec4<<<(N / 4 + 255) / 256, 256>>>((float4*)a, (float4*)b, N / 4);
  copy_strided<<<(N + 255) / 256, 256>>>(a, b, n, n);
  transpose_conflict<<<dim3(n / 32, n / 32), dim3(32, 8)>>>(a, b, n);
  fma_loop<<<132 * 16, 256>>>(a, 4096);
  CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  printf("ok\n"); return 0;
}
