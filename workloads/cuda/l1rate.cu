// l1rate.cu — how much of L1's peak coalesced 32-bit global loads reach when most of them hit L1, by the loads per
// thread and the share of sectors that miss: the question CAC001's estimate leaves open. Its fixed kernel (the
// vertical stencil in 2-D blocks, vstencil.cu) does the planted kernel's L1 work but runs it at 63-65% of L1's peak
// on an H100 and an H200, where the estimate assumes 85%; conv9.cu's naive 9x9 reaches 87%, its 5x5 70%.
//
// vrows_T<taps>_B<rows>: the vertical stencil of vstencil.cu with `taps` taps over an 8192x8192 float image in
//   dim3(32, rows) blocks: a block reads rows + taps - 1 input rows for `rows` output rows, so about
//   (rows + taps - 1) / (rows x taps) of the sectors it asks L1 for miss (first touch in the block), the rest hit.
// window_T<taps>: every block reads the same 32 KB window (256 rows of 32 floats) `taps` times per thread: after
//   the first touch every load hits L1, the no-miss limit of the same load stream.
// Each thread issues `taps` 4-byte loads, one per row, each warp's load one 128-byte line, then adds and one store.
//
// Modes: ./l1rate --once            launch each kernel once (for ncu)
//        ./l1rate --bench           3 warm-ups, median of 15 cudaEvent timings per kernel, JSON lines
// Build: nvcc -arch=sm_90 -lineinfo -O3 -o bin/l1rate l1rate.cu
#include "common.cuh"
#include <string>

namespace {
constexpr int SW = 8192, SH = 8192, WROWS = 256;

template <int TAPS, int BY>
__global__ void vrows(const float* __restrict__ in, float* __restrict__ out) {
  constexpr int R = TAPS / 2;
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * BY + threadIdx.y;
  if (x >= SW || y >= SH) return;
  float acc;
  if (y >= R && y < SH - R) {
    const float* p = in + (size_t)(y - R) * SW + x;
    acc = 0.f;
#pragma unroll
    for (int d = 0; d < TAPS; ++d) acc += p[(size_t)d * SW];
  } else {
    acc = in[(size_t)y * SW + x];
  }
  out[(size_t)y * SW + x] = acc;
}

template <int TAPS>
__global__ void window(const float* __restrict__ win, float* __restrict__ out) {
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 8 + threadIdx.y;
  if (x >= SW || y >= SH) return;
  float acc = 0.f;
#pragma unroll
  for (int d = 0; d < TAPS; ++d) acc += win[((y + d) & (WROWS - 1)) * 32 + threadIdx.x];
  out[(size_t)y * SW + x] = acc;
}

using KernelFn = void (*)(const float*, float*);
struct K { const char* name; KernelFn fn; dim3 grid, block; };
#define VROWS(T, B) {"vrows_T" #T "_B" #B, vrows<T, B>, dim3(SW / 32, SH / B), dim3(32, B)}
#define WINDOW(T) {"window_T" #T, window<T>, dim3(SW / 32, SH / 8), dim3(32, 8)}
const K KERNELS[] = {
    VROWS(9, 4),  VROWS(9, 8),  VROWS(9, 32),  VROWS(33, 4), VROWS(33, 8),
    VROWS(33, 32), VROWS(65, 4), VROWS(65, 8), VROWS(65, 32), WINDOW(9),
    WINDOW(33),   WINDOW(65),
};
}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? std::string(argv[1]) : "--once";
  CK(cudaSetDevice(0));
  float* in = device_random_floats((size_t)SW * SH, 12u);
  float* out = device_alloc<float>((size_t)SW * SH);
  CK(cudaDeviceSynchronize());
  // the window is the image's first 32 KB: the same bytes for every block
  auto launch = [&](const K& k) { k.fn<<<k.grid, k.block>>>(in, out); };
  if (mode == "--once") {
    for (auto& k : KERNELS) { launch(k); CKLAUNCH(); }
    CK(cudaDeviceSynchronize());
    return 0;
  }
  if (mode == "--bench") {
    for (auto& k : KERNELS) bench_json(k.name, [&] { launch(k); });
    return 0;
  }
  fprintf(stderr, "usage: l1rate (--once | --bench)\n");
  return 2;
}
