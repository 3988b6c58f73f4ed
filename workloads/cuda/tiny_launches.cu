// tiny_launches.cu — many tiny launches (launch-overhead advice, phase-1 timing):
// tiny_add on 4096 floats launched 2000 times in a loop, then one big_add on 64M floats.
// Build: nvcc -arch=sm_90 -lineinfo -O3 -o bin/tiny_launches tiny_launches.cu
#include "common.cuh"
#include <chrono>

static constexpr int TINY = 4096;
static constexpr int LAUNCHES = 2000;
static constexpr size_t BIG = size_t(1) << 26;

__global__ void tiny_add(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
__global__ void big_add(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int main() {
  CK(cudaSetDevice(0));
  float* ta = device_random_floats(TINY, 1u);
  float* tb = device_random_floats(TINY, 2u);
  float* tc = device_alloc<float>(TINY);
  float* ba = device_random_floats(BIG, 3u);
  float* bb = device_random_floats(BIG, 4u);
  float* bc = device_alloc<float>(BIG);
  CK(cudaDeviceSynchronize());
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < LAUNCHES; ++r) {
    tiny_add<<<TINY / 256, 256>>>(ta, tb, tc, TINY);
    CKLAUNCH();
  }
  CK(cudaDeviceSynchronize());
  auto t1 = std::chrono::steady_clock::now();
  big_add<<<(unsigned)(BIG / 256), 256>>>(ba, bb, bc, BIG);
  CKLAUNCH();
  CK(cudaDeviceSynchronize());
  auto t2 = std::chrono::steady_clock::now();
  printf("tiny_add x%d: %.1f us total (%.2f us per launch); big_add: %.1f us (wall clock)\n", LAUNCHES,
         std::chrono::duration<double, std::micro>(t1 - t0).count(),
         std::chrono::duration<double, std::micro>(t1 - t0).count() / LAUNCHES,
         std::chrono::duration<double, std::micro>(t2 - t1).count());
  return 0;
}
