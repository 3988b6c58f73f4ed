// rows.cu — a row operation written a thread per row (planted: uncoalesced, 32 blocks), and the fix MEM001 advises
// applied alone (lanes along the row), so that the coalesced kernel's modelled time can be checked against twins that
// change nothing else; with a block per row and a flat stream of the same bytes, to measure the share of DRAM's peak
// that kernels walking many rows at once reach (the llm.c exam's row kernels reached 54-67%, the planted streams
// 66-86%: benchmarks/RESULTS.md, 2026-12-06).
//
// The operation, on R = 8192 rows of C = 16384 floats (512 MB in, 512 MB out): m = max_j x[r][j], then
// out[r][j] = __expf(x[r][j] - m). Two passes over each row: two reads and one write of every element (1.5 GB).
//
//   PLANTED rows_thread      a thread per row, 32 blocks of 256: the warp's 32 lanes are 32 rows, every load a
//                            sector of its own; the thread's loops walk its row one float at a time
//   TWIN    rows_warp        a warp per row, lane i on elements i, i + 32, ... (coalesced), the max combined with
//                            __shfl_xor_sync: 1,024 blocks of 256; nothing else changed (the fix alone)
//   TWIN    rows_warp_x4     rows_warp with 4 independent loads per lane in flight in both passes
//   TWIN    rows_block       a 256-thread block per row (8,192 blocks), the warps' maxima combined in shared memory
//   REFERENCE stream_2r1w    out[i] = __expf(x[i] - y[i]) over R × C elements, one per thread: the same bytes (two
//                            reads, one write) as a flat stream, the whole grid on one contiguous front
//
// Expected first findings, written before any capture: rows_thread MEM001 (a thread per row; its estimate is the
// fixed kernel with the warp-per-row mapping: compare with rows_warp); the twins and the stream at or near their
// DRAM floor (ROOF001 or no finding).
//
// Modes: ./rows --once [--only a,b]   each kernel once, for ncu
//        ./rows --bench               3 warm-ups, median of 25 cudaEvent timings, JSON lines (role, pair, bytes_min)
//        ./rows --check               each twin's output against rows_thread's (bit for bit: the max is exact and
//                                     every kernel computes __expf(x - m) the same way), JSON lines
// Build: nvcc -arch=sm_90 -lineinfo -O3 -Xptxas -v -o bin/rows rows.cu
#include "common.cuh"
#include <cfloat>
#include <string>

namespace {
constexpr int BS = 256;
constexpr int R = 8192, C = 16384;
constexpr size_t N = (size_t)R * C;

unsigned blocks_for(size_t n) { return (unsigned)((n + BS - 1) / BS); }

template <class T>
std::vector<T> to_host(const T* d, size_t n) {
  std::vector<T> h(n);
  CK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

__global__ void rows_thread(const float* __restrict__ x, float* __restrict__ out, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* row = x + (size_t)r * cols;
  float m = -FLT_MAX;
  for (int j = 0; j < cols; ++j) m = fmaxf(m, row[j]);
  float* o = out + (size_t)r * cols;
  for (int j = 0; j < cols; ++j) o[j] = __expf(row[j] - m);
}

__device__ __forceinline__ float warp_max(float v) {
  for (int s = 16; s > 0; s >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, s));
  return v;
}

__global__ void rows_warp(const float* __restrict__ x, float* __restrict__ out, int rows, int cols) {
  int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (r >= rows) return;
  const float* row = x + (size_t)r * cols;
  float m = -FLT_MAX;
  for (int j = lane; j < cols; j += 32) m = fmaxf(m, row[j]);
  m = warp_max(m);
  float* o = out + (size_t)r * cols;
  for (int j = lane; j < cols; j += 32) o[j] = __expf(row[j] - m);
}

__global__ void rows_warp_x4(const float* __restrict__ x, float* __restrict__ out, int rows, int cols) {
  int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (r >= rows) return;
  const float* row = x + (size_t)r * cols;
  float m0 = -FLT_MAX, m1 = -FLT_MAX, m2 = -FLT_MAX, m3 = -FLT_MAX;
  int j = lane;
  for (; j + 96 < cols; j += 128) {  // four loads issued before any is used
    float a = row[j], b = row[j + 32], c = row[j + 64], d = row[j + 96];
    m0 = fmaxf(m0, a); m1 = fmaxf(m1, b); m2 = fmaxf(m2, c); m3 = fmaxf(m3, d);
  }
  for (; j < cols; j += 32) m0 = fmaxf(m0, row[j]);
  float m = warp_max(fmaxf(fmaxf(m0, m1), fmaxf(m2, m3)));
  float* o = out + (size_t)r * cols;
  j = lane;
  for (; j + 96 < cols; j += 128) {
    float a = row[j], b = row[j + 32], c = row[j + 64], d = row[j + 96];
    o[j] = __expf(a - m); o[j + 32] = __expf(b - m); o[j + 64] = __expf(c - m); o[j + 96] = __expf(d - m);
  }
  for (; j < cols; j += 32) o[j] = __expf(row[j] - m);
}

__global__ void rows_block(const float* __restrict__ x, float* __restrict__ out, int cols) {
  __shared__ float part[BS / 32];
  const float* row = x + (size_t)blockIdx.x * cols;
  float m = -FLT_MAX;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, row[j]);
  m = warp_max(m);
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = m;
  __syncthreads();
  m = part[0];
  for (int w = 1; w < BS / 32; ++w) m = fmaxf(m, part[w]);
  float* o = out + (size_t)blockIdx.x * cols;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) o[j] = __expf(row[j] - m);
}

__global__ void stream_2r1w(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out,
                            size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __expf(x[i] - y[i]);
}
}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? std::string(argv[1]) : "--once";
  const std::string only = only_arg(argc, argv);
  CK(cudaSetDevice(0));
  float* x = device_random_floats(N, 71u, -4.0f, 8.0f);
  float* y = device_random_floats(N, 72u, -4.0f, 8.0f);
  float* out_a = device_alloc<float>(N, 0xFF);
  float* out_b = device_alloc<float>(N, 0xFF);
  CK(cudaDeviceSynchronize());

  struct K { const char* name; const char* role; std::function<void()> fn; };
  const double bytes_min = 12.0 * N;  // two reads and one write of every element
  std::vector<K> ks = {
      {"rows_thread", "planted", [&] { rows_thread<<<R / BS, BS>>>(x, out_a, R, C); }},
      {"rows_warp", "twin", [&] { rows_warp<<<R * 32 / BS, BS>>>(x, out_b, R, C); }},
      {"rows_warp_x4", "twin", [&] { rows_warp_x4<<<R * 32 / BS, BS>>>(x, out_b, R, C); }},
      {"rows_block", "twin", [&] { rows_block<<<R, BS>>>(x, out_b, C); }},
      {"stream_2r1w", "reference", [&] { stream_2r1w<<<blocks_for(N), BS>>>(x, y, out_b, N); }},
  };

  if (mode == "--once") {
    for (auto& k : ks)
      if (selected(only, k.name)) { k.fn(); CKLAUNCH(); }
    CK(cudaDeviceSynchronize());
    return 0;
  }
  if (mode == "--bench") {
    for (auto& k : ks) {
      char extra[160];
      snprintf(extra, sizeof extra, "\"role\": \"%s\", \"pair\": \"rows\", \"bytes_min\": %.0f", k.role, bytes_min);
      bench_json_runs(k.name, k.fn, 25, extra);
    }
    return 0;
  }
  if (mode == "--check") {
    ks[0].fn();
    CKLAUNCH();
    CK(cudaDeviceSynchronize());
    const auto want = to_host(out_a, N);
    for (size_t t = 1; t + 1 < ks.size(); ++t) {  // the twins (the stream computes something else)
      CK(cudaMemset(out_b, 0xFF, N * 4));
      ks[t].fn();
      CKLAUNCH();
      CK(cudaDeviceSynchronize());
      const auto got = to_host(out_b, N);
      size_t bad = 0;
      for (size_t i = 0; i < N; ++i) bad += memcmp(&want[i], &got[i], 4) != 0;
      printf("{\"pair\": \"rows\", \"planted\": \"rows_thread\", \"twin\": \"%s\", \"checked\": %zu, "
             "\"mismatches\": %zu, \"ok\": %s}\n", ks[t].name, N, bad, bad ? "false" : "true");
    }
    return 0;
  }
  fprintf(stderr, "usage: rows (--once [--only a,b] | --bench | --check)\n");
  return 2;
}
