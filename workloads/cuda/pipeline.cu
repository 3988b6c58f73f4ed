// pipeline.cu — before/after versions of one three-kernel program, for the report-diff feature.
// Kernels (names identical in every variant), launched once each, in this order:
//   normalize_rows  65536 rows x 1024 floats, one block of 256 threads per row, (x - mean) / std
//   transpose_tile  8192 x 8192 float transpose through a 32x32 shared-memory tile
//   scale_add       z = 2*t + y over 64M floats
// -DVARIANT=0  baseline:   transpose_tile uses tile[32][32] (32-way bank conflicts on the column read)
// -DVARIANT=1  fixed:      transpose_tile uses tile[32][33]; other kernels identical to 0
// -DVARIANT=2  regression: as 1, but scale_add reads its input t with a stride of 32 elements
// Build: nvcc -arch=sm_90 -lineinfo -O3 -DVARIANT=0 -o bin/pipeline_v0 pipeline.cu
#include "common.cuh"

#ifndef VARIANT
#define VARIANT 0
#endif

static constexpr size_t N = size_t(1) << 26;
static constexpr int TN = 8192;
static constexpr int ROWLEN = 1024;

__global__ void __launch_bounds__(256) normalize_rows(const float* __restrict__ in, float* __restrict__ out) {
  __shared__ float red[2][8];
  const size_t base = (size_t)blockIdx.x * ROWLEN;
  float4 v = reinterpret_cast<const float4*>(in + base)[threadIdx.x];
  float s = v.x + v.y + v.z + v.w;
  float q = v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    s += __shfl_xor_sync(0xffffffffu, s, o);
    q += __shfl_xor_sync(0xffffffffu, q, o);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) { red[0][warp] = s; red[1][warp] = q; }
  __syncthreads();
  s = 0.f; q = 0.f;
#pragma unroll
  for (int w = 0; w < 8; ++w) { s += red[0][w]; q += red[1][w]; }
  const float mean = s / ROWLEN;
  const float inv = rsqrtf(fmaxf(q / ROWLEN - mean * mean, 0.f) + 1e-5f);
  v.x = (v.x - mean) * inv; v.y = (v.y - mean) * inv; v.z = (v.z - mean) * inv; v.w = (v.w - mean) * inv;
  reinterpret_cast<float4*>(out + base)[threadIdx.x] = v;
}

#if VARIANT == 0
#define TILE_PAD 0
#else
#define TILE_PAD 1
#endif
__global__ void transpose_tile(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float tile[32][32 + TILE_PAD];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * n + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) out[(size_t)(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}

__global__ void scale_add(const float* __restrict__ t, const float* __restrict__ y, float* __restrict__ z, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
#if VARIANT == 2
  // Regression: consecutive threads read t 32 elements (128 bytes) apart; 32 passes over the array.
  const size_t passes = 32, per = n / passes;
  size_t src = (i % per) * passes + i / per;
#else
  size_t src = i;
#endif
  z[i] = 2.0f * t[src] + y[i];
}

int main() {
  CK(cudaSetDevice(0));
  float* a = device_random_floats(N, 1u);
  float* y = device_random_floats(N, 2u);
  float* b = device_alloc<float>(N);
  float* c = device_alloc<float>(N);
  float* z = device_alloc<float>(N);
  normalize_rows<<<(unsigned)(N / ROWLEN), 256>>>(a, b);
  CKLAUNCH();
  transpose_tile<<<dim3(TN / 32, TN / 32), dim3(32, 8)>>>(b, c, TN);
  CKLAUNCH();
  scale_add<<<(unsigned)(N / 256), 256>>>(c, y, z, N);
  CKLAUNCH();
  CK(cudaDeviceSynchronize());
  float h[4];
  CK(cudaMemcpy(h, z, sizeof(h), cudaMemcpyDeviceToHost));
  printf("pipeline variant %d ok: z[0..3] = %g %g %g %g\n", VARIANT, h[0], h[1], h[2], h[3]);
  return 0;
}
