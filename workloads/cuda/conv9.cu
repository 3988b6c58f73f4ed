// conv9.cu — missing reuse in a direct convolution: a 9×9 (and a 5×5) single-channel fp32 filter over an 8192×8192
// image, the filter in __constant__ memory, the input padded by 4 on every side with copies of its border (so that
// every kernel but the clamped one reads the window with no index arithmetic: compile-time strides, immediate
// offsets).
//
// PLANTED: reuse — conv9_global: one output per thread (32×8 blocks), each of the 81 taps a global load through L1
//   (LDG + FFMA, the filter tap an operand from the constant bank). Every input element is loaded 81 times: by the 9
//   neighbouring threads of its row and the 9 rows of its column. L1 serves nearly all of it (the window of a block
//   is 16 rows × 40 floats), so DRAM moves about the compulsory bytes while the L1/TEX pipe does 81 requests per
//   output, each over two 128-byte lines when the warp's 32 floats start off a line boundary.
// FIXED TWINS:
//   conv9_smem     — the block's window (its 32×8 outputs plus the halo of 4) staged once in shared memory; the 81
//                    taps are shared-memory loads (LDS + FFMA): the global loads drop from 81 to 2.5 per output.
//   conv9_smem_reg — the same tile, and each thread computes 8 outputs down a column with a sliding window: each
//                    row of the tile it needs is read once into 9 registers and feeds every output that row touches
//                    (16 rows × 9 LDS for 8 outputs: 18 LDS per output instead of 81; 1.4 global loads per output for the
//                    72×40 tile); then the FMAs are the floor.
//   conv9_reg      — register blocking alone, no shared memory: 8 outputs down a column per thread, 18 global
//                    loads per output.
// conv9_clamped — the naive kernel as it is usually written, reading the unpadded image with each tap's index
//   clamped to the border inside the loop (index arithmetic on top of the missing reuse): the same output.
// conv5_global / conv5_smem_reg / conv5_clamped — the same for a 5×5 filter (25 taps; 12 LDS per output with 8
//   outputs). The clamped kernels against their twins: conv*_global is the index-math fix alone (no clamps, no 64-bit
//   indices: ISU001's measured twin), conv*_smem_reg the reuse fix (TIL001's); a clamped 5×5 is cache.cu's blur_global
//   with a filter, measured there as issue-bound on its clamps.
//
// Modes: ./conv9 --once [--only a,b]    launch each kernel once (for ncu)
//        ./conv9 --bench [--only a,b]   3 warm-ups, median of 15 cudaEvent timings, JSON lines
//        ./conv9 --check                compare each twin's output with its planted kernel's, JSON lines
// Build: nvcc -arch=sm_90 -lineinfo -O3 -o bin/conv9 conv9.cu
#include "common.cuh"
#include <cstring>
#include <string>

namespace {
constexpr int W = 8192, H = 8192, PAD = 4, P = W + 2 * PAD;  // P: the padded input's row stride, in floats
constexpr int BX = 32, BY = 8;                                 // threads per block
constexpr int RB = 8;                                          // outputs per thread down a column (register blocking)

__constant__ float c_filter9[9 * 9];
__constant__ float c_filter5[5 * 5];

template <int R>
__device__ __forceinline__ float tap(int dy, int dx) {
  return R == 4 ? c_filter9[dy * 9 + dx] : c_filter5[dy * 5 + dx];
}

// out(x, y) = sum over dy, dx in [0, 2R] of f(dy, dx) * in(x + dx - R, y + dy - R); `in` points at the padded image.
template <int R>
__device__ __forceinline__ void conv_global(const float* __restrict__ in, float* __restrict__ out) {
  int x = blockIdx.x * BX + threadIdx.x, y = blockIdx.y * BY + threadIdx.y;
  const float* p = in + (size_t)(y + PAD - R) * P + (x + PAD - R);
  float acc = 0.f;
#pragma unroll
  for (int dy = 0; dy <= 2 * R; ++dy) {
#pragma unroll
    for (int dx = 0; dx <= 2 * R; ++dx) acc += tap<R>(dy, dx) * p[dy * P + dx];  // (2R+1)² global loads per output
  }
  out[(size_t)y * W + x] = acc;
}

// The naive kernel as usually written: the unpadded image (the padded buffer's interior, row stride P), each tap's
// coordinates clamped to the border inside the loop.
template <int R>
__device__ __forceinline__ void conv_clamped(const float* __restrict__ in, float* __restrict__ out, int w, int h) {
  int x = blockIdx.x * BX + threadIdx.x, y = blockIdx.y * BY + threadIdx.y;
  if (x >= w || y >= h) return;
  const float* img = in + (size_t)PAD * P + PAD;
  const float* f = R == 4 ? c_filter9 : c_filter5;
  float acc = 0.f;
  for (int dy = -R; dy <= R; ++dy) {
    int yy = min(max(y + dy, 0), h - 1);
    for (int dx = -R; dx <= R; ++dx) {
      int xx = min(max(x + dx, 0), w - 1);
      acc += f[(dy + R) * (2 * R + 1) + dx + R] * img[(size_t)yy * P + xx];
    }
  }
  out[(size_t)y * w + x] = acc;
}

// TY output rows per block (BY threads down, each ROWS outputs), the block's window staged in shared memory.
template <int R, int ROWS>
struct Tile {
  static constexpr int TY = BY * ROWS, TH = TY + 2 * R, TW = BX + 2 * R;
  __device__ static void load(float (*tile)[TW], const float* __restrict__ in) {
    const float* base = in + (size_t)(blockIdx.y * TY + PAD - R) * P + (blockIdx.x * BX + PAD - R);
    for (int i = threadIdx.y * BX + threadIdx.x; i < TH * TW; i += BX * BY) {
      int ty = i / TW, tx = i % TW;
      tile[ty][tx] = base[(size_t)ty * P + tx];
    }
    __syncthreads();
  }
};

// FIXED TWIN (shared-memory tile with its halo): one output per thread, the taps read from shared memory.
template <int R>
__device__ __forceinline__ void conv_smem(const float* __restrict__ in, float* __restrict__ out) {
  using T = Tile<R, 1>;
  __shared__ float tile[T::TH][T::TW];
  T::load(tile, in);
  float acc = 0.f;
#pragma unroll
  for (int dy = 0; dy <= 2 * R; ++dy) {
#pragma unroll
    for (int dx = 0; dx <= 2 * R; ++dx) acc += tap<R>(dy, dx) * tile[threadIdx.y + dy][threadIdx.x + dx];
  }
  int x = blockIdx.x * BX + threadIdx.x, y = blockIdx.y * BY + threadIdx.y;
  out[(size_t)y * W + x] = acc;
}

// The sliding window down a column: row r of the window (RB + 2R rows) is read once into 2R+1 registers by `row(r)`
// and added into every output o of the RB that it touches (o <= r <= o + 2R). Fully unrolled: acc[] stays in registers.
template <int R, class Row>
__device__ __forceinline__ void column_window(float (&acc)[RB], Row row) {
#pragma unroll
  for (int o = 0; o < RB; ++o) acc[o] = 0.f;
#pragma unroll
  for (int r = 0; r < RB + 2 * R; ++r) {
    float v[2 * R + 1];
    row(r, v);
#pragma unroll
    for (int o = 0; o < RB; ++o) {
      if (r - o < 0 || r - o > 2 * R) continue;
#pragma unroll
      for (int dx = 0; dx <= 2 * R; ++dx) acc[o] += tap<R>(r - o, dx) * v[dx];
    }
  }
}

// FIXED TWIN (tile + register blocking): each thread RB outputs down a column, each tile row read once.
template <int R>
__device__ __forceinline__ void conv_smem_reg(const float* __restrict__ in, float* __restrict__ out) {
  using T = Tile<R, RB>;
  __shared__ float tile[T::TH][T::TW];
  T::load(tile, in);
  float acc[RB];
  const int ty0 = threadIdx.y * RB;
  column_window<R>(acc, [&](int r, float (&v)[2 * R + 1]) {
#pragma unroll
    for (int dx = 0; dx <= 2 * R; ++dx) v[dx] = tile[ty0 + r][threadIdx.x + dx];
  });
  int x = blockIdx.x * BX + threadIdx.x, y0 = blockIdx.y * T::TY + ty0;
#pragma unroll
  for (int o = 0; o < RB; ++o) out[(size_t)(y0 + o) * W + x] = acc[o];
}

// FIXED TWIN (register blocking alone): RB outputs down a column per thread, each input row loaded once from global.
template <int R>
__device__ __forceinline__ void conv_reg(const float* __restrict__ in, float* __restrict__ out) {
  int x = blockIdx.x * BX + threadIdx.x, y0 = (blockIdx.y * BY + threadIdx.y) * RB;
  const float* p = in + (size_t)(y0 + PAD - R) * P + (x + PAD - R);
  float acc[RB];
  column_window<R>(acc, [&](int r, float (&v)[2 * R + 1]) {
#pragma unroll
    for (int dx = 0; dx <= 2 * R; ++dx) v[dx] = p[r * P + dx];
  });
#pragma unroll
  for (int o = 0; o < RB; ++o) out[(size_t)(y0 + o) * W + x] = acc[o];
}

__global__ void conv9_global(const float* __restrict__ in, float* __restrict__ out, int, int) {
  conv_global<4>(in, out);
}
__global__ void conv9_smem(const float* __restrict__ in, float* __restrict__ out, int, int) { conv_smem<4>(in, out); }
__global__ void conv9_smem_reg(const float* __restrict__ in, float* __restrict__ out, int, int) {
  conv_smem_reg<4>(in, out);
}
__global__ void conv9_reg(const float* __restrict__ in, float* __restrict__ out, int, int) { conv_reg<4>(in, out); }
__global__ void conv9_clamped(const float* __restrict__ in, float* __restrict__ out, int w, int h) {
  conv_clamped<4>(in, out, w, h);
}
__global__ void conv5_clamped(const float* __restrict__ in, float* __restrict__ out, int w, int h) {
  conv_clamped<2>(in, out, w, h);
}
__global__ void conv5_global(const float* __restrict__ in, float* __restrict__ out, int, int) {
  conv_global<2>(in, out);
}
__global__ void conv5_smem_reg(const float* __restrict__ in, float* __restrict__ out, int, int) {
  conv_smem_reg<2>(in, out);
}

using KernelFn = void (*)(const float*, float*, int, int);
struct K { const char* name; KernelFn fn; dim3 grid, block; };
const dim3 BLOCK(BX, BY), GRID1(W / BX, H / BY), GRID_RB(W / BX, H / (BY * RB));
const K KERNELS[] = {
    {"conv9_global", conv9_global, GRID1, BLOCK},     {"conv9_smem", conv9_smem, GRID1, BLOCK},
    {"conv9_smem_reg", conv9_smem_reg, GRID_RB, BLOCK}, {"conv9_reg", conv9_reg, GRID_RB, BLOCK},
    {"conv9_clamped", conv9_clamped, GRID1, BLOCK},   {"conv5_global", conv5_global, GRID1, BLOCK},
    {"conv5_smem_reg", conv5_smem_reg, GRID_RB, BLOCK}, {"conv5_clamped", conv5_clamped, GRID1, BLOCK},
};

// The padded input on the device: a random W×H image, its border copied PAD times outward (clamp-to-edge).
float* padded_input(uint32_t seed) {
  std::vector<float> h((size_t)P * (H + 2 * PAD));
  parallel_for((size_t)H + 2 * PAD, [&](size_t b, size_t e) {
    for (size_t py = b; py < e; ++py) {
      int y = std::min(std::max((int)py - PAD, 0), H - 1);
      for (int px = 0; px < P; ++px) {
        int x = std::min(std::max(px - PAD, 0), W - 1);
        h[py * P + px] = hash_float((uint32_t)((size_t)y * W + x), seed, 0.5f, 1.0f);
      }
    }
  });
  float* d = nullptr;
  CK(cudaMalloc(&d, h.size() * sizeof(float)));
  CK(cudaMemcpy(d, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? std::string(argv[1]) : "--once";
  std::string only = only_arg(argc, argv);
  CK(cudaSetDevice(0));
  float f9[81], f5[25];  // filters that sum to 1, not separable
  for (int i = 0; i < 81; ++i) f9[i] = hash_float(i, 91u, 0.5f, 1.0f) / 81.f;
  for (int i = 0; i < 25; ++i) f5[i] = hash_float(i, 51u, 0.5f, 1.0f) / 25.f;
  CK(cudaMemcpyToSymbol(c_filter9, f9, sizeof f9));
  CK(cudaMemcpyToSymbol(c_filter5, f5, sizeof f5));
  float* in = padded_input(13u);
  float* out = device_alloc<float>((size_t)W * H);
  float* out2 = device_alloc<float>((size_t)W * H);
  CK(cudaDeviceSynchronize());
  auto launch = [&](const K& k, float* o) { k.fn<<<k.grid, k.block>>>(in, o, W, H); };
  if (mode == "--once") {
    for (auto& k : KERNELS)
      if (selected(only, k.name)) { launch(k, out); CKLAUNCH(); }
    CK(cudaDeviceSynchronize());
    return 0;
  }
  if (mode == "--bench") {
    for (auto& k : KERNELS)
      if (selected(only, k.name)) bench_json(k.name, [&] { launch(k, out); });
    return 0;
  }
  if (mode == "--check") {
    const char* pairs[][2] = {{"conv9_global", "conv9_smem"}, {"conv9_global", "conv9_smem_reg"},
                              {"conv9_global", "conv9_reg"}, {"conv9_global", "conv9_clamped"},
                              {"conv5_global", "conv5_smem_reg"}, {"conv5_global", "conv5_clamped"}};
    for (auto& pr : pairs) {
      const K *p = nullptr, *q = nullptr;
      for (auto& k : KERNELS) { if (!strcmp(k.name, pr[0])) p = &k; if (!strcmp(k.name, pr[1])) q = &k; }
      launch(*p, out);
      launch(*q, out2);
      CK(cudaDeviceSynchronize());
      double md = max_abs_diff(out, out2, (size_t)W * H);
      printf("{\"planted\": \"%s\", \"twin\": \"%s\", \"max_abs_diff\": %.3g, \"ok\": %s}\n", pr[0], pr[1], md,
             md < 1e-4 ? "true" : "false");
    }
    return 0;
  }
  fprintf(stderr, "usage: conv9 (--once | --bench | --check) [--only a,b]\n");
  return 2;
}
