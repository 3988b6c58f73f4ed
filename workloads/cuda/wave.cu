// wave.cu — the planted partial-wave flaw of the accuracy benchmark (LCH001, launch-config), with its fixed twins.
//
// PLANTED: launch-config — gemm_big_tiles: model_step.cu's gemm_tiled (32×32 output tiles, 32×8 threads, 4 outputs
//   per thread, A and B staged in shared memory) on the model step's FFN up-projection, M = 256 tokens, N = 1024,
//   K = 256: 8 × 32 = 256 blocks where the H200's 132 SMs hold 792 at once (6 per SM): 0.32 of a wave, about 2 blocks
//   per SM, a quarter of the warp slots busy, and the kernel waits on latency (the whole-model report,
//   fixtures/model_step_989.ncu-rep.xz, shows this shape at 24% achieved occupancy, memory and compute at 41% and
//   37% of peak).
// FIXED TWIN: gemm_small_tiles — the same product with 16×16 output tiles, 16×16 threads, one output per thread:
//   64 × 16 = 1024 blocks, about one full wave. The fix LCH001 names first ("smaller tiles per block").
// SECOND TWIN: gemm_splitk + splitk_sum — the big tiles with the K loop split in 3 (768 blocks, 0.97 of a wave),
//   partial products to a workspace, then a sum kernel; measured as the sum of both kernels' times.
// Added on 2026-11-30, after the first measurement (the two twins above did not beat the planted kernel):
//   gemm_splitk_serial — split-K in one kernel, the last block of each tile adds the partial tiles;
//   gemm_two_per_thread — 256 blocks of 32×16 threads, 2 outputs per thread: twice the warps per SM;
//   and a long-K pair, K = 4096 on the same grid (the K loop, not launch and drain, is the time there):
//   PLANTED gemm_big_tiles_long, FIXED TWIN gemm_splitk_serial_long.
//
// Modes: ./wave --once            launch each kernel once (for ncu)
//        ./wave --bench           3 warm-ups, median of 15 cudaEvent timings, JSON lines
//        ./wave --check           compare the twins' outputs with gemm_big_tiles', JSON lines
// Build: nvcc -arch=sm_90 -lineinfo -O3 -o bin/wave wave.cu
#include "common.cuh"
#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <utility>

namespace {
constexpr int M = 256, N = 1024, K = 256, SPLIT = 3;
constexpr int wave_k = K;
constexpr int KL = 4096;  // the long-K shape (added 2026-11-30): the same grid, 16x the K loop

// The big-tile product over the K range [kb, ke) of blockIdx.z's chunk (k_chunk 0: all of K), into slice z of C.
template <int K = wave_k>
__device__ __forceinline__ void big_tiles_body(const float* __restrict__ A, const float* __restrict__ B,
                                               float* __restrict__ C, int k_chunk) {
  constexpr int T = 32;
  __shared__ float As[T][T], Bs[T][T + 1];
  int tx = threadIdx.x, ty = threadIdx.y;  // 32 × 8 threads, 4 rows each
  int row0 = blockIdx.y * T, col = blockIdx.x * T + tx;
  int kb = k_chunk ? blockIdx.z * k_chunk : 0, ke = k_chunk ? min(K, kb + k_chunk) : K;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int t = kb; t < ke; t += T) {
    for (int r = ty; r < T; r += 8) {
      int ar = row0 + r, ac = t + tx;
      As[r][tx] = (ar < M && ac < ke) ? A[(size_t)ar * K + ac] : 0.f;
      int br = t + r;
      Bs[r][tx] = (br < ke && col < N) ? B[(size_t)br * N + col] : 0.f;
    }
    __syncthreads();
    for (int k = 0; k < T; ++k) {
      float bv = Bs[k][tx];
      for (int i = 0; i < 4; ++i) acc[i] += As[ty + 8 * i][k] * bv;
    }
    __syncthreads();
  }
  float* out = C + (size_t)blockIdx.z * M * N;  // split-K: one slice of the workspace per K chunk
  for (int i = 0; i < 4; ++i) {
    int r = row0 + ty + 8 * i;
    if (r < M && col < N) out[(size_t)r * N + col] = acc[i];
  }
}

// PLANTED (launch-config): 32×32 tiles, 256 blocks for 132 SMs that hold 792.
__global__ void gemm_big_tiles(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
  big_tiles_body(A, B, C, 0);
}

// FIXED TWIN: 16×16 tiles, one output per thread, 1024 blocks.
__global__ void gemm_small_tiles(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
  constexpr int T = 16;
  __shared__ float As[T][T], Bs[T][T + 1];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.f;
  for (int t = 0; t < K; t += T) {
    As[ty][tx] = (row < M && t + tx < K) ? A[(size_t)row * K + t + tx] : 0.f;
    Bs[ty][tx] = (t + ty < K && col < N) ? B[(size_t)(t + ty) * N + col] : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < T; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

// SECOND TWIN: the big tiles over a third of K each (gemm_splitk), then the three slices summed.
__global__ void gemm_splitk(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ W) {
  constexpr int CHUNK = ((K / SPLIT + 31) / 32) * 32;  // 96: chunks of 96, 96, 64
  big_tiles_body(A, B, W, CHUNK);
}
__global__ void splitk_sum(const float* __restrict__ W, float* __restrict__ C) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < M * N) C[i] = W[i] + W[(size_t)M * N + i] + W[2 * (size_t)M * N + i];
}

// THIRD TWIN (2026-11-30): split-K in one kernel ("serial split-K"): each of the 3 blocks of a tile writes its partial
// tile to the workspace; the last of them to finish (a counter per tile) adds the other two to its own and writes C,
// then resets the counter. No second kernel, no memset.
template <int KK>
__device__ __forceinline__ void splitk_serial_body(const float* __restrict__ A, const float* __restrict__ B,
                                                   float* __restrict__ W, float* __restrict__ C,
                                                   unsigned* __restrict__ count) {
  constexpr int CHUNK = ((KK / SPLIT + 31) / 32) * 32;
  big_tiles_body<KK>(A, B, W, CHUNK);  // partial tile z -> slice z of W
  __shared__ unsigned arrived;
  __threadfence();
  __syncthreads();
  unsigned tile = blockIdx.y * gridDim.x + blockIdx.x;
  if (threadIdx.x == 0 && threadIdx.y == 0) arrived = atomicAdd(&count[tile], 1u);
  __syncthreads();
  if (arrived != SPLIT - 1) return;  // not the last block of this tile
  __threadfence();
  int col = blockIdx.x * 32 + threadIdx.x;
  for (int i = 0; i < 4; ++i) {
    int r = blockIdx.y * 32 + threadIdx.y + 8 * i;
    size_t o = (size_t)r * N + col;
    float s = 0.f;
    for (int z = 0; z < SPLIT; ++z) s += __ldcg(W + (size_t)z * M * N + o);
    C[o] = s;
  }
  if (threadIdx.x == 0 && threadIdx.y == 0) count[tile] = 0;
}
__global__ void gemm_splitk_serial(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ W,
                                   float* __restrict__ C, unsigned* __restrict__ count) {
  splitk_serial_body<K>(A, B, W, C, count);
}

// THE LONG-K PAIR (2026-11-30): the same 256-block grid over K = 4096, where the K loop, not the launch, is the time:
// PLANTED gemm_big_tiles_long (the partial wave) and its split-K twin gemm_splitk_serial_long.
__global__ void gemm_big_tiles_long(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
  big_tiles_body<KL>(A, B, C, 0);
}
__global__ void gemm_splitk_serial_long(const float* __restrict__ A, const float* __restrict__ B,
                                        float* __restrict__ W, float* __restrict__ C, unsigned* __restrict__ count) {
  splitk_serial_body<KL>(A, B, W, C, count);
}

// FOURTH TWIN (2026-11-30): the big tiles with twice the threads, 2 outputs per thread (32×16 threads): the grid stays
// 256 blocks, each SM gets twice the warps ("more warps per block" rather than more blocks).
__global__ void gemm_two_per_thread(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
  constexpr int T = 32;
  __shared__ float As[T][T], Bs[T][T + 1];
  int tx = threadIdx.x, ty = threadIdx.y;  // 32 × 16 threads, 2 rows each
  int row0 = blockIdx.y * T, col = blockIdx.x * T + tx;
  float acc[2] = {0.f, 0.f};
  for (int t = 0; t < K; t += T) {
    for (int r = ty; r < T; r += 16) {
      As[r][tx] = A[(size_t)(row0 + r) * K + t + tx];
      Bs[r][tx] = B[(size_t)(t + r) * N + col];
    }
    __syncthreads();
    for (int k = 0; k < T; ++k) {
      float bv = Bs[k][tx];
      for (int i = 0; i < 2; ++i) acc[i] += As[ty + 16 * i][k] * bv;
    }
    __syncthreads();
  }
  for (int i = 0; i < 2; ++i) C[(size_t)(row0 + ty + 16 * i) * N + col] = acc[i];
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? std::string(argv[1]) : "--once";
  CK(cudaSetDevice(0));
  float* A = device_random_floats((size_t)M * K, 21u, -0.5f, 1.0f);
  float* B = device_random_floats((size_t)K * N, 22u, -0.5f, 1.0f);
  float* C1 = device_alloc<float>((size_t)M * N);
  float* C2 = device_alloc<float>((size_t)M * N);
  float* C3 = device_alloc<float>((size_t)M * N);
  float* Wk = device_alloc<float>((size_t)SPLIT * M * N);
  float* C4 = device_alloc<float>((size_t)M * N);
  float* C5 = device_alloc<float>((size_t)M * N);
  float* Wk2 = device_alloc<float>((size_t)SPLIT * M * N);
  unsigned* count = nullptr;
  CK(cudaMalloc(&count, (N / 32) * (M / 32) * sizeof(unsigned)));
  CK(cudaMemset(count, 0, (N / 32) * (M / 32) * sizeof(unsigned)));
  float* AL = device_random_floats((size_t)M * KL, 23u, -0.5f, 1.0f);
  float* BL = device_random_floats((size_t)KL * N, 24u, -0.5f, 1.0f);
  float* CL1 = device_alloc<float>((size_t)M * N);
  float* CL2 = device_alloc<float>((size_t)M * N);
  CK(cudaDeviceSynchronize());
  auto big = [&] { gemm_big_tiles<<<dim3(N / 32, M / 32), dim3(32, 8)>>>(A, B, C1); };
  auto small = [&] { gemm_small_tiles<<<dim3(N / 16, M / 16), dim3(16, 16)>>>(A, B, C2); };
  auto splitk = [&] {
    gemm_splitk<<<dim3(N / 32, M / 32, SPLIT), dim3(32, 8)>>>(A, B, Wk);
    splitk_sum<<<(M * N + 255) / 256, 256>>>(Wk, C3);
  };
  auto serial = [&] { gemm_splitk_serial<<<dim3(N / 32, M / 32, SPLIT), dim3(32, 8)>>>(A, B, Wk2, C4, count); };
  auto two = [&] { gemm_two_per_thread<<<dim3(N / 32, M / 32), dim3(32, 16)>>>(A, B, C5); };
  auto big_long = [&] { gemm_big_tiles_long<<<dim3(N / 32, M / 32), dim3(32, 8)>>>(AL, BL, CL1); };
  auto serial_long = [&] {
    gemm_splitk_serial_long<<<dim3(N / 32, M / 32, SPLIT), dim3(32, 8)>>>(AL, BL, Wk2, CL2, count);
  };
  struct Run { const char* name; std::function<void()> fn; };
  const Run runs[] = {{"gemm_big_tiles", big}, {"gemm_small_tiles", small}, {"gemm_splitk+splitk_sum", splitk},
                      {"gemm_splitk_serial", serial}, {"gemm_two_per_thread", two},
                      {"gemm_big_tiles_long", big_long}, {"gemm_splitk_serial_long", serial_long}};
  if (mode == "--once") {
    for (auto& r : runs) { r.fn(); CKLAUNCH(); }
    CK(cudaDeviceSynchronize());
    return 0;
  }
  if (mode == "--bench") {
    for (auto& r : runs) bench_json(r.name, r.fn);
    return 0;
  }
  if (mode == "--check") {
    big(); small(); splitk(); serial(); serial(); two();  // serial twice: the counters must reset themselves
    CKLAUNCH();
    CK(cudaDeviceSynchronize());
    for (auto pr : {std::make_pair("gemm_small_tiles", C2), std::make_pair("gemm_splitk+splitk_sum", C3),
                    std::make_pair("gemm_splitk_serial", C4), std::make_pair("gemm_two_per_thread", C5)}) {
      double md = max_abs_diff(C1, pr.second, (size_t)M * N);
      printf("{\"planted\": \"gemm_big_tiles\", \"twin\": \"%s\", \"max_abs_diff\": %.3g, \"ok\": %s}\n", pr.first, md,
             md < 1e-3 ? "true" : "false");
    }
    big_long(); serial_long(); serial_long();
    CKLAUNCH();
    CK(cudaDeviceSynchronize());
    double md = max_abs_diff(CL1, CL2, (size_t)M * N);  // sums of 4096 products of magnitude <= 1
    printf("{\"planted\": \"gemm_big_tiles_long\", \"twin\": \"gemm_splitk_serial_long\", \"max_abs_diff\": %.3g, "
           "\"ok\": %s}\n", md, md < 1e-2 ? "true" : "false");
    return 0;
  }
  fprintf(stderr, "usage: wave (--once | --bench | --check)\n");
  return 2;
}
