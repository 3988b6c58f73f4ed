// cache.cu — the planted `cache` flaw of the accuracy benchmark (vstencil_rows, with its fixed twin), and the
// planted index-math flaw (blur_global, with its fixed twin).
//
// PLANTED: cache — vstencil_rows: a vertical 33-tap stencil (radius 16) over an 8192×8192 float image, launched
//   with 256×1 blocks. Every input element is read by the 33 threads above and below it, but those threads sit in
//   33 different blocks on different SMs, so L1 never sees the reuse: each of the 33 reads is an L1 miss served by
//   L2. DRAM moves the image about once (the 33-row band fits in L2), L2 serves it 33 times: the kernel is limited by
//   L2 bandwidth, not DRAM.
// FIXED TWIN: vstencil_tiles — the same code, launched with 32×32 blocks: the 33 threads that share an input
//   element now sit in one block, on one SM, and L1 serves the reuse (about 64 rows fetched per 32 rows computed).
//   The fix is the block shape alone.
//
// PLANTED: instruction-overhead — blur_global: a 5×5 box blur on a 4096×4096 float image where every thread reads
//   its 25 neighbours straight from global memory with clamped 64-bit indices computed in the inner loop (70% of the
//   executed instructions are index arithmetic). FIXED TWIN: blur_global_hoisted. blur_smem stages the tile in
//   shared memory (still issue-bound on its index math; no fixed twin measured).
//
// Modes: ./cache --once            launch each kernel once (for ncu)
//        ./cache --bench           3 warm-ups, median of 15 cudaEvent timings, JSON lines
//        ./cache --check           compare the outputs of each pair, JSON lines
// Build: nvcc -arch=sm_90 -lineinfo -O3 -o bin/cache cache.cu
#include "common.cuh"
#include <algorithm>
#include <cstring>
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

// The vertical stencil: SR rows above and below, on an SW × SH image (compile-time sizes, so the 33 row offsets are
// immediates of the loads and the loop is loads and adds only). Rows within SR of the border copy their input.
constexpr int SW = 8192, SH = 8192, SR = 16;

template <int SBX, int SBY>
__device__ __forceinline__ void vstencil_body(const float* __restrict__ in, float* __restrict__ out) {
  int x = blockIdx.x * SBX + threadIdx.x, y = blockIdx.y * SBY + threadIdx.y;
  if (x >= SW || y >= SH) return;
  float acc;
  if (y >= SR && y < SH - SR) {
    const float* p = in + (size_t)(y - SR) * SW + x;
    acc = 0.f;
#pragma unroll
    for (int d = 0; d <= 2 * SR; ++d) acc += p[(size_t)d * SW];  // 33 reads of elements 32 other blocks read too
    acc *= 1.f / (2 * SR + 1);
  } else {
    acc = in[(size_t)y * SW + x];
  }
  out[(size_t)y * SW + x] = acc;
}

// PLANTED (cache): 256×1 blocks; the threads that share an input element are in 33 different blocks.
__global__ void vstencil_rows(const float* __restrict__ in, float* __restrict__ out, int, int) {
  vstencil_body<256, 1>(in, out);
}
// FIXED TWIN: 32×32 blocks; they share it inside one block, through L1.
__global__ void vstencil_tiles(const float* __restrict__ in, float* __restrict__ out, int, int) {
  vstencil_body<32, 32>(in, out);
}

using KernelFn = void (*)(const float*, float*, int, int);
struct K { const char* name; KernelFn fn; dim3 grid, block; bool big; };
const K KERNELS[] = {
    {"blur_global", blur_global, dim3(W / BX, Hh / BY), dim3(BX, BY), false},
    {"blur_smem", blur_smem, dim3(W / BX, Hh / BY), dim3(BX, BY), false},
    {"blur_global_hoisted", blur_global_hoisted, dim3(W / BX, Hh / BY), dim3(BX, BY), false},
    {"vstencil_rows", vstencil_rows, dim3(SW / 256, SH), dim3(256, 1), true},
    {"vstencil_tiles", vstencil_tiles, dim3(SW / 32, SH / 32), dim3(32, 32), true},
};

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? std::string(argv[1]) : "--once";
  CK(cudaSetDevice(0));
  float* in = device_random_floats((size_t)W * Hh, 11u);
  float* out = device_alloc<float>((size_t)W * Hh);
  float* out2 = device_alloc<float>((size_t)W * Hh);
  float* big_in = device_random_floats((size_t)SW * SH, 12u);
  float* big_out = device_alloc<float>((size_t)SW * SH);
  float* big_out2 = device_alloc<float>((size_t)SW * SH);
  CK(cudaDeviceSynchronize());
  auto launch = [&](const K& k, float* o) {
    if (k.big) k.fn<<<k.grid, k.block>>>(big_in, o ? o : big_out, SW, SH);
    else k.fn<<<k.grid, k.block>>>(in, o ? o : out, W, Hh);
  };
  if (mode == "--once") {
    for (auto& k : KERNELS) { launch(k, nullptr); CKLAUNCH(); }
    CK(cudaDeviceSynchronize());
    return 0;
  }
  if (mode == "--bench") {
    for (auto& k : KERNELS) bench_json(k.name, [&] { launch(k, nullptr); });
    return 0;
  }
  if (mode == "--check") {
    const char* pairs[][2] = {{"blur_global", "blur_smem"}, {"blur_global", "blur_global_hoisted"},
                              {"vstencil_rows", "vstencil_tiles"}};
    for (auto& pr : pairs) {
      const K *p = nullptr, *q = nullptr;
      for (auto& k : KERNELS) { if (!strcmp(k.name, pr[0])) p = &k; if (!strcmp(k.name, pr[1])) q = &k; }
      launch(*p, p->big ? big_out : out);
      launch(*q, q->big ? big_out2 : out2);
      CK(cudaDeviceSynchronize());
      double md = p->big ? max_abs_diff(big_out, big_out2, (size_t)SW * SH) : max_abs_diff(out, out2, (size_t)W * Hh);
      printf("{\"planted\": \"%s\", \"twin\": \"%s\", \"max_abs_diff\": %.3g, \"ok\": %s}\n", pr[0], pr[1], md,
             md < 1e-4 ? "true" : "false");
    }
    return 0;
  }
  fprintf(stderr, "usage: cache (--once | --bench | --check)\n");
  return 2;
}
