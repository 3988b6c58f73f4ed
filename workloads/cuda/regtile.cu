// regtile.cu — a naive fp32 matrix product and the fix TIL001 advises for it since 2026-12-06 (tiles of both operands
// in shared memory and 8×8 outputs per thread in registers, the card's code as written), beside the one-level twin
// flaws.cu pairs with it, so that the two-level estimate (the FMAs at the FP32 peak plus the 0.25 shared wavefronts
// per warp FMA an 8×8 tile leaves, added: `rulekit.models.tiled_product_ns`) meets a twin that applies that advice
// and nothing else. flaws.cu's twin applies the first level only (32×32 tiles, 4 outputs a thread: measured 2.31× on
// the H200, 2.22× on the H100), against which the two-level estimate (4.63×) is not comparable.
//
// C = A · B, n = 2048 (flaws.cu's shape and data), row-major, 17.2 GFLOP.
//
//   PLANTED matmul_naive     one output per thread, 32×8 threads: every operand from global memory (flaws.cu's)
//   TWIN    matmul_tiled     32×32 tiles in shared memory, 4 outputs per thread (flaws.cu's one-level twin)
//   TWIN    matmul_regtile   128×128 block tiles, k step 8, 16×16 threads, 8×8 outputs per thread (rows ty + 16i,
//                            columns tx + 16j): the code of TIL001's card, with its indices bound to this product
//
// Expected first findings, written before any capture: matmul_naive TIL001 (both levels; estimate ≈ 4.6× on an
// H100 or H200: compare with matmul_regtile's time); matmul_tiled TIL001 (its register tile is 4×1: 0.81 shared
// wavefronts per warp FMA); matmul_regtile at its FMA and shared-memory ceilings (ROOF001, TEN001 for the tensor
// cores, or no finding).
//
// Modes: ./regtile --once [--only a,b]   each kernel once, for ncu
//        ./regtile --bench               3 warm-ups, median of 25 cudaEvent timings, JSON lines (role, pair, flops)
//        ./regtile --check               each twin's C against matmul_naive's (largest |difference|), JSON lines
// Build: nvcc -arch=sm_90 -lineinfo -O3 -Xptxas -v -o bin/regtile regtile.cu
#include "common.cuh"
#include <string>

namespace {
constexpr int MM = 2048;
constexpr size_t N2 = (size_t)MM * MM;

__global__ void matmul_naive(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n) {
  int col = blockIdx.x * 32 + threadIdx.x, row = blockIdx.y * 8 + threadIdx.y;
  float acc = 0.f;
  for (int k = 0; k < n; ++k) acc = fmaf(A[(size_t)row * n + k], B[(size_t)k * n + col], acc);
  C[(size_t)row * n + col] = acc;
}

__global__ void matmul_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n) {
  __shared__ float As[32][32];
  __shared__ float Bs[32][32];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * 32 + ty, col = blockIdx.x * 32 + tx;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int k0 = 0; k0 < n; k0 += 32) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      As[ty + 8 * j][tx] = A[(size_t)(row + 8 * j) * n + k0 + tx];
      Bs[ty + 8 * j][tx] = B[(size_t)(k0 + ty + 8 * j) * n + col];
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 32; ++kk) {
      float b = Bs[kk][tx];
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[j] = fmaf(As[ty + 8 * j][kk], b, acc[j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) C[(size_t)(row + 8 * j) * n + col] = acc[j];
}

// TIL001's card for a matrix product, as written there; K = N = n, m0 and n0 the block's first row and column.
__global__ void __launch_bounds__(256) matmul_regtile(const float* __restrict__ A, const float* __restrict__ B,
                                                      float* __restrict__ C, int n) {
  const int K = n, N = n;
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
  const int m0 = blockIdx.y * 128, n0 = blockIdx.x * 128;
  __shared__ float As[8][128 + 4], Bs[8][128];  // A's tile transposed (+4: its store is conflict-free)
  float acc[8][8] = {};
  for (int k0 = 0; k0 < K; k0 += 8) {
    for (int e = tid; e < 8 * 128; e += 256) {  // both tiles, in coalesced rows
      As[e % 8][e / 8] = A[(size_t)(m0 + e / 8) * K + k0 + e % 8];
      Bs[e / 128][e % 128] = B[(size_t)(k0 + e / 128) * N + n0 + e % 128];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 8; ++k) {  // 16 shared reads feed 64 FMAs
      float a[8], b[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) { a[i] = As[k][ty + 16 * i]; b[i] = Bs[k][tx + 16 * i]; }
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) C[(size_t)(m0 + ty + 16 * i) * N + n0 + tx + 16 * j] = acc[i][j];
}
}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? std::string(argv[1]) : "--once";
  const std::string only = only_arg(argc, argv);
  CK(cudaSetDevice(0));
  float* A = device_random_floats(N2, 11u, -1.f, 2.f);  // flaws.cu's operands
  float* B = device_random_floats(N2, 12u, -1.f, 2.f);
  float* c_naive = device_alloc<float>(N2);
  float* c_twin = device_alloc<float>(N2);
  CK(cudaDeviceSynchronize());

  struct Kern { const char* name; const char* role; std::function<void(float*)> fn; };
  std::vector<Kern> ks = {
      {"matmul_naive", "planted",
       [&](float* c) { matmul_naive<<<dim3(MM / 32, MM / 8), dim3(32, 8)>>>(A, B, c, MM); }},
      {"matmul_tiled", "twin",
       [&](float* c) { matmul_tiled<<<dim3(MM / 32, MM / 32), dim3(32, 8)>>>(A, B, c, MM); }},
      {"matmul_regtile", "twin",
       [&](float* c) { matmul_regtile<<<dim3(MM / 128, MM / 128), dim3(16, 16)>>>(A, B, c, MM); }},
  };

  if (mode == "--once") {
    for (auto& k : ks)
      if (selected(only, k.name)) { k.fn(k.role[0] == 'p' ? c_naive : c_twin); CKLAUNCH(); }
    CK(cudaDeviceSynchronize());
    return 0;
  }
  if (mode == "--bench") {
    const double flops = 2.0 * MM * (double)MM * MM;
    for (auto& k : ks) {
      char extra[160];
      snprintf(extra, sizeof extra, "\"role\": \"%s\", \"pair\": \"matmul\", \"flops\": %.0f", k.role, flops);
      bench_json_runs(k.name, [&] { k.fn(c_twin); }, 25, extra);
    }
    return 0;
  }
  if (mode == "--check") {
    ks[0].fn(c_naive);
    CKLAUNCH();
    CK(cudaDeviceSynchronize());
    for (size_t t = 1; t < ks.size(); ++t) {
      CK(cudaMemset(c_twin, 0xFF, N2 * 4));
      ks[t].fn(c_twin);
      CKLAUNCH();
      CK(cudaDeviceSynchronize());
      const double diff = max_abs_diff(c_naive, c_twin, N2);  // |C| ~ sqrt(n) ~ 26: the same sum, reordered at most
      printf("{\"pair\": \"matmul\", \"planted\": \"matmul_naive\", \"twin\": \"%s\", \"checked\": %zu, "
             "\"max_abs_diff\": %.3g, \"ok\": %s}\n", ks[t].name, N2, diff, diff <= 1e-3 ? "true" : "false");
    }
    return 0;
  }
  fprintf(stderr, "usage: regtile (--once [--only a,b] | --bench | --check)\n");
  return 2;
}
