// vstencil.cu — cache.cu's planted `cache` kernel (vstencil_rows) beside the twin its card's first suggestion
// writes, so that CAC001's estimate is scored against the fix the card names, not another block shape.
//
// vstencil_rows: a vertical 33-tap stencil (radius 16) over an 8192×8192 float image in 256×1 blocks, cache.cu's
//   code verbatim: the 33 threads that read an input element sit in 33 different blocks, so L2, not L1, serves the
//   reuse.
// vstencil_tiles8: the same body in dim3(32, 8) blocks (256 threads, the card's "e.g. dim3(32, 8)"): the threads
//   that share an input share a block for 8 of the 33 rows; L1 serves the rest of the band within a block's rows.
// vstencil_tiles: the same body in dim3(32, 32) blocks, cache.cu's twin (the card's second suggestion).
//
// Modes: ./vstencil --once            launch each kernel once (for ncu)
//        ./vstencil --bench           3 warm-ups, median of 15 cudaEvent timings, JSON lines
//        ./vstencil --check           compare each twin's output with vstencil_rows', JSON lines
// Build: nvcc -arch=sm_90 -lineinfo -O3 -o bin/vstencil vstencil.cu
#include "common.cuh"
#include <cstring>
#include <string>

namespace {
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
    for (int d = 0; d <= 2 * SR; ++d) acc += p[(size_t)d * SW];
    acc *= 1.f / (2 * SR + 1);
  } else {
    acc = in[(size_t)y * SW + x];
  }
  out[(size_t)y * SW + x] = acc;
}

__global__ void vstencil_rows(const float* __restrict__ in, float* __restrict__ out) { vstencil_body<256, 1>(in, out); }
__global__ void vstencil_tiles8(const float* __restrict__ in, float* __restrict__ out) { vstencil_body<32, 8>(in, out); }
__global__ void vstencil_tiles(const float* __restrict__ in, float* __restrict__ out) { vstencil_body<32, 32>(in, out); }

using KernelFn = void (*)(const float*, float*);
struct K { const char* name; KernelFn fn; dim3 grid, block; };
const K KERNELS[] = {
    {"vstencil_rows", vstencil_rows, dim3(SW / 256, SH), dim3(256, 1)},
    {"vstencil_tiles8", vstencil_tiles8, dim3(SW / 32, SH / 8), dim3(32, 8)},
    {"vstencil_tiles", vstencil_tiles, dim3(SW / 32, SH / 32), dim3(32, 32)},
};
}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? std::string(argv[1]) : "--once";
  CK(cudaSetDevice(0));
  float* in = device_random_floats((size_t)SW * SH, 12u);
  float* out = device_alloc<float>((size_t)SW * SH);
  float* out2 = device_alloc<float>((size_t)SW * SH);
  CK(cudaDeviceSynchronize());
  auto launch = [&](const K& k, float* o) { k.fn<<<k.grid, k.block>>>(in, o); };
  if (mode == "--once") {
    for (auto& k : KERNELS) { launch(k, out); CKLAUNCH(); }
    CK(cudaDeviceSynchronize());
    return 0;
  }
  if (mode == "--bench") {
    for (auto& k : KERNELS) bench_json(k.name, [&] { launch(k, out); });
    return 0;
  }
  if (mode == "--check") {
    launch(KERNELS[0], out);
    for (int i = 1; i < 3; ++i) {
      launch(KERNELS[i], out2);
      CK(cudaDeviceSynchronize());
      double md = max_abs_diff(out, out2, (size_t)SW * SH);
      printf("{\"planted\": \"%s\", \"twin\": \"%s\", \"max_abs_diff\": %.3g, \"ok\": %s}\n", KERNELS[0].name,
             KERNELS[i].name, md, md < 1e-4 ? "true" : "false");
    }
    return 0;
  }
  fprintf(stderr, "usage: vstencil (--once | --bench | --check)\n");
  return 2;
}
