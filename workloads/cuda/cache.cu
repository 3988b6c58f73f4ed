// cache.cu — the planted `cache` flaw of the accuracy benchmark, with its fixed twin.
//
// PLANTED: cache — blur_global: a 5×5 box blur on a 4096×4096 float image where every thread reads its 25
//   neighbours straight from global memory. Neighbouring threads and rows re-read the same sectors 25 times; the
//   reuse is served by the L1/L2 caches, so the kernel is limited by cache bandwidth (L1TEX wavefronts), not by
//   DRAM: DRAM moves the image about once while L1 serves it 25 times.
// FIXED TWIN: blur_smem — each 32×8 block stages its (32+4)×(8+4) input tile (with the halo) in shared memory
//   once, then reads the 25 taps from there; global memory is read about once per element.
//
// Also blur_global_hoisted (below): the fixed twin of blur_global's index arithmetic (ISU001).
// Modes: ./cache --once            launch each kernel once (for ncu)
//        ./cache --bench           3 warm-ups, median of 15 cudaEvent timings, JSON lines
//        ./cache --check           compare the two outputs, JSON line
// Build: nvcc -arch=sm_90 -lineinfo -O3 -o bin/cache cache.cu
#include "common.cuh"
#include <algorithm>
#include <string>

namespace {
constexpr int W = 4096, Hh = 4096, R = 2, BX = 32, BY = 8;

__global__ void blur_global(const float* __restrict__ in, float* __restrict__ out, int w, int h) {
  int x = blockIdx.x * BX + threadIdx.x, y = blockIdx.y * BY + threadIdx.y;
  if (x >= w || y >= h) return;
  float acc = 0.f;
  for (int dy = -R; dy <= R; ++dy) {
    int yy = min(max(y + dy, 0), h - 1);
    for (int dx = -R; dx <= R; ++dx) {
      int xx = min(max(x + dx, 0), w - 1);
      acc += in[(size_t)yy * w + xx];  // 25 global loads per output: the same sectors again and again
    }
  }
  out[(size_t)y * w + x] = acc * (1.f / 25.f);
}

__global__ void blur_smem(const float* __restrict__ in, float* __restrict__ out, int w, int h) {
  __shared__ float tile[BY + 2 * R][BX + 2 * R];
  int x0 = blockIdx.x * BX - R, y0 = blockIdx.y * BY - R;
  for (int i = threadIdx.y * BX + threadIdx.x; i < (BY + 2 * R) * (BX + 2 * R); i += BX * BY) {
    int ty = i / (BX + 2 * R), tx = i % (BX + 2 * R);
    int yy = min(max(y0 + ty, 0), h - 1), xx = min(max(x0 + tx, 0), w - 1);
    tile[ty][tx] = in[(size_t)yy * w + xx];
  }
  __syncthreads();
  int x = blockIdx.x * BX + threadIdx.x, y = blockIdx.y * BY + threadIdx.y;
  if (x >= w || y >= h) return;
  float acc = 0.f;
  for (int dy = 0; dy <= 2 * R; ++dy)
    for (int dx = 0; dx <= 2 * R; ++dx) acc += tile[threadIdx.y + dy][threadIdx.x + dx];
  out[(size_t)y * w + x] = acc * (1.f / 25.f);
}

// FIXED TWIN of blur_global for ISU001 (index math): the same 25 global loads per output, but interior blocks
// (all but the border ring) skip the clamps, use 32-bit indices and step a row pointer; border blocks keep the
// clamped path. It isolates the cost of the bookkeeping instructions from the memory accesses.
__global__ void blur_global_hoisted(const float* __restrict__ in, float* __restrict__ out, int w, int h) {
  int x = blockIdx.x * BX + threadIdx.x, y = blockIdx.y * BY + threadIdx.y;
  if (x >= w || y >= h) return;
  bool interior = blockIdx.x > 0 && blockIdx.y > 0 && blockIdx.x + 1 < gridDim.x && blockIdx.y + 1 < gridDim.y;
  float acc = 0.f;
  if (interior) {
    const float* row = in + (y - R) * w + (x - R);  // fits in 32 bits for 4096 x 4096
#pragma unroll
    for (int dy = 0; dy <= 2 * R; ++dy, row += w) {
#pragma unroll
      for (int dx = 0; dx <= 2 * R; ++dx) acc += row[dx];
    }
  } else {
    for (int dy = -R; dy <= R; ++dy) {
      int yy = min(max(y + dy, 0), h - 1);
      for (int dx = -R; dx <= R; ++dx) acc += in[yy * w + min(max(x + dx, 0), w - 1)];
    }
  }
  out[(size_t)y * w + x] = acc * (1.f / 25.f);
}

using KernelFn = void (*)(const float*, float*, int, int);
struct K { const char* name; KernelFn fn; };
const K KERNELS[] = {{"blur_global", blur_global}, {"blur_smem", blur_smem}, {"blur_global_hoisted", blur_global_hoisted}};
}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? std::string(argv[1]) : "--once";
  CK(cudaSetDevice(0));
  float* in = device_random_floats((size_t)W * Hh, 11u);
  float* out = device_alloc<float>((size_t)W * Hh);
  float* out2 = device_alloc<float>((size_t)W * Hh);
  dim3 grid(W / BX, Hh / BY), block(BX, BY);
  CK(cudaDeviceSynchronize());
  if (mode == "--once") {
    for (auto& k : KERNELS) { k.fn<<<grid, block>>>(in, out, W, Hh); CKLAUNCH(); }
    CK(cudaDeviceSynchronize());
    return 0;
  }
  if (mode == "--bench") {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    for (auto& k : KERNELS) {
      for (int i = 0; i < 3; ++i) k.fn<<<grid, block>>>(in, out, W, Hh);
      CKLAUNCH();
      std::vector<float> t;
      for (int i = 0; i < 15; ++i) {
        CK(cudaEventRecord(a)); k.fn<<<grid, block>>>(in, out, W, Hh); CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms * 1000.f);
      }
      std::sort(t.begin(), t.end());
      printf("{\"kernel\": \"%s\", \"median_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f, \"runs\": 15}\n", k.name,
             t[7], t[0], t[14]);
    }
    return 0;
  }
  if (mode == "--check") {
    blur_global<<<grid, block>>>(in, out, W, Hh);
    blur_smem<<<grid, block>>>(in, out2, W, Hh);
    CK(cudaDeviceSynchronize());
    std::vector<float> h1((size_t)W * Hh), h2((size_t)W * Hh);
    CK(cudaMemcpy(h1.data(), out, h1.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(h2.data(), out2, h2.size() * 4, cudaMemcpyDeviceToHost));
    double md = 0;
    for (size_t i = 0; i < h1.size(); ++i) md = std::max(md, (double)fabsf(h1[i] - h2[i]));
    printf("{\"planted\": \"blur_global\", \"twin\": \"blur_smem\", \"max_abs_diff\": %.3g, \"ok\": %s}\n", md,
           md < 1e-4 ? "true" : "false");
    blur_global_hoisted<<<grid, block>>>(in, out2, W, Hh);
    CK(cudaMemcpy(h2.data(), out2, h2.size() * 4, cudaMemcpyDeviceToHost));
    md = 0;
    for (size_t i = 0; i < h1.size(); ++i) md = std::max(md, (double)fabsf(h1[i] - h2[i]));
    printf("{\"planted\": \"blur_global\", \"twin\": \"blur_global_hoisted\", \"max_abs_diff\": %.3g, \"ok\": %s}\n",
           md, md < 1e-4 ? "true" : "false");
    return 0;
  }
  fprintf(stderr, "usage: cache (--once | --bench | --check)\n");
  return 2;
}
