// ceilings.cu — one planted kernel per machine ceiling, for checking the analysis' machine model (which pipe or
// memory level bounds a kernel, and at what rate) against kernels whose bound is known by construction.
//
// Every loop kernel runs on sms × 8 × 4 blocks of 256 threads (four full waves at 2048 threads per SM) and keeps
// its operands in registers; the only memory traffic is one load and one store per thread.
//
//   sfu_loop        per iteration __sinf, __cosf, __expf (MUFU.SIN, MUFU.COS, MUFU.EX2: the MUFU pipe, 16 lanes per
//                   clock per SM) and a few FP32 ops: bound by the SFU/XU pipe, far under the FP32 rate
//   fadd_loop       8 independent FADD chains, no multiply: one FLOP per lane per instruction, so the FP32 pipe
//                   is full at half the FFMA FLOP rate
//   ffma_loop       8 independent FFMA chains: the reference, 2 FLOPs per lane per instruction
//   index_math      per useful load ~15 integer instructions (IMAD, IADD3, SHF, LOP3, a modulo by a constant);
//                   the loads hit a 16 KB table that stays in L1: bound by instruction issue, little memory traffic
//   hfma2_loop      8 independent __hfma2 chains (2 fp16 lanes per thread, 4 FLOPs per instruction); nvcc 13 emits
//                   about half of them as HFMA2 and half as HFMA2.MMA (the same operation issued to the MMA pipe)
//   dfma_loop       8 independent fp64 FMA chains (DFMA: the H200's FP64 pipe)
//   l2_resident_out reads 16 MB and writes 16 MB: the written lines are still dirty in the 60 MB L2 when the
//                   kernel ends, so dram__bytes_write counts almost none of the output
//   dram_out        the same code on 256 MB in and out (the twin: the output leaves L2 during the kernel)
//   empty_kernel    <<<1, 32>>>, no body: the launch floor
//   tiny_chain_step <<<4, 128>>> on 512 floats; --chain launches it 256 times in one stream, each launch
//                   depending on the last (the same buffer)
//
// Modes: ./ceilings --once [--only a,b]   each kernel once (empty_kernel and one tiny_chain_step included), for ncu
//        ./ceilings --chain               empty_kernel once, then the 256-launch chain (duration-only ncu report)
//        ./ceilings --bench               3 warm-ups, median of 25 cudaEvent timings per kernel, JSON lines; then the
//                                         chain (per launch: one event pair over the 256 launches ÷ 256, median
//                                         of 25) and 256 back-to-back empty launches likewise
//        ./ceilings --check               each kernel's output against a host reference on a sample, JSON lines
// Build: nvcc -arch=sm_90 -lineinfo -O3 -Xptxas -v -o bin/ceilings ceilings.cu
#include "common.cuh"
#include <cuda_fp16.h>
#include <cmath>
#include <string>

namespace {
constexpr int BS = 256;
constexpr int SFU_ITERS = 96, FADD_ITERS = 512, FFMA_ITERS = 512, IDX_ITERS = 128, HFMA_ITERS = 512, DFMA_ITERS = 96;
constexpr int TAB = 4096;                      // index_math's table: 16 KB
constexpr size_t L2_N = (size_t)4 << 20;       // 4 M floats = 16 MB in, 16 MB out
constexpr size_t BIG_N = (size_t)64 << 20;     // 64 M floats = 256 MB in, 256 MB out
constexpr int CHAIN = 256, CHAIN_N = 512;      // the dependent chain of tiny launches

// ---- SFU: three MUFU ops per iteration (and ~5 FP32 ops). Values stay in [-2, 2].
__global__ void sfu_loop(const float* __restrict__ in, float* __restrict__ out, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float a = in[i], b = in[i] * 0.5f + 0.25f;
#pragma unroll 4
  for (int k = 0; k < iters; ++k) {
    a = __sinf(a) + __cosf(b);        // MUFU.SIN, MUFU.COS
    b = __expf(-0.5f * a * a) - 0.5f;  // MUFU.EX2
  }
  out[i] = a + b;
}

// ---- FADD only: 8 independent accumulators, each adding its own increment (no multiply anywhere in the loop).
__global__ void fadd_loop(const float* __restrict__ in, float* __restrict__ out, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = in[i];
  float a0 = x, a1 = x + 1.f, a2 = x + 2.f, a3 = x + 3.f, a4 = x + 4.f, a5 = x + 5.f, a6 = x + 6.f, a7 = x + 7.f;
  float d0 = x * 1e-3f, d1 = -d0, d2 = x * 2e-3f, d3 = -d2, d4 = x * 3e-3f, d5 = -d4, d6 = x * 4e-3f, d7 = -d6;
#pragma unroll 8
  for (int k = 0; k < iters; ++k) {
    // __fadd_rn: never contracted with the multiply that made d into an FFMA (plain += was, at -O3)
    a0 = __fadd_rn(a0, d0); a1 = __fadd_rn(a1, d1); a2 = __fadd_rn(a2, d2); a3 = __fadd_rn(a3, d3);
    a4 = __fadd_rn(a4, d4); a5 = __fadd_rn(a5, d5); a6 = __fadd_rn(a6, d6); a7 = __fadd_rn(a7, d7);
  }
  out[i] = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
}

// ---- FFMA: 8 independent a = a * m + c chains (they converge to c / (1 - m); no overflow).
__global__ void ffma_loop(const float* __restrict__ in, float* __restrict__ out, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = in[i], m = 0.999f - x * 1e-4f;
  float a0 = x, a1 = x + 1.f, a2 = x + 2.f, a3 = x + 3.f, a4 = x + 4.f, a5 = x + 5.f, a6 = x + 6.f, a7 = x + 7.f;
  float c0 = x * 1e-3f, c1 = c0 + 1e-3f, c2 = c0 + 2e-3f, c3 = c0 + 3e-3f;
#pragma unroll 8
  for (int k = 0; k < iters; ++k) {
    a0 = fmaf(a0, m, c0); a1 = fmaf(a1, m, c1); a2 = fmaf(a2, m, c2); a3 = fmaf(a3, m, c3);
    a4 = fmaf(a4, m, c0); a5 = fmaf(a5, m, c1); a6 = fmaf(a6, m, c2); a7 = fmaf(a7, m, c3);
  }
  out[i] = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
}

// ---- Integer index arithmetic: a hash step, a row/column split with a modulo by a constant, a clamp and a
// wrap, then one load from a 16 KB table (L1-resident). ~15 integer instructions per useful load.
__host__ __device__ __forceinline__ uint32_t index_step(uint32_t& h, int k) {
  h = h * 1664525u + 1013904223u;     // IMAD
  uint32_t r = (h >> 7) ^ (h << 3);   // SHF, SHF/IMAD.SHL, LOP3
  uint32_t row = (r >> 5) % 61u;      // IMAD.HI, SHF, IMAD (modulo by a constant)
  uint32_t col = (r & 31u) * 3u + (uint32_t)k;  // LOP3, IMAD/LEA, IADD3
  uint32_t idx = row * 67u + col;     // IMAD
  uint32_t lim = 4095u + (uint32_t)k;
  idx = (idx < lim ? idx : lim) & (TAB - 1);  // VIMNMX, LOP3
  return idx;
}
__global__ void index_math(const float* __restrict__ tab, float* __restrict__ out, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t h = hash32((uint32_t)i);
  float acc = 0.f;
#pragma unroll 4
  for (int k = 0; k < iters; ++k) acc += __ldg(&tab[index_step(h, k)]);
  out[i] = acc;
}

// ---- fp16 packed: 8 independent __hfma2 chains (a = a * m + c in half2; they converge to c / (1 - m) < 16).
__global__ void hfma2_loop(const float* __restrict__ in, float* __restrict__ out, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = in[i];
  __half2 m = __floats2half2_rn(0.75f, 0.875f - x * 0.01f);
  __half2 c = __floats2half2_rn(x * 0.5f, 0.25f);
  __half2 a0 = __floats2half2_rn(x, 1.f), a1 = __floats2half2_rn(x, 2.f), a2 = __floats2half2_rn(x, 3.f),
          a3 = __floats2half2_rn(x, 4.f), a4 = __floats2half2_rn(1.f, x), a5 = __floats2half2_rn(2.f, x),
          a6 = __floats2half2_rn(3.f, x), a7 = __floats2half2_rn(4.f, x);
#pragma unroll 8
  for (int k = 0; k < iters; ++k) {
    a0 = __hfma2(a0, m, c); a1 = __hfma2(a1, m, c); a2 = __hfma2(a2, m, c); a3 = __hfma2(a3, m, c);
    a4 = __hfma2(a4, m, c); a5 = __hfma2(a5, m, c); a6 = __hfma2(a6, m, c); a7 = __hfma2(a7, m, c);
  }
  __half2 s = __hadd2(__hadd2(__hadd2(a0, a1), __hadd2(a2, a3)), __hadd2(__hadd2(a4, a5), __hadd2(a6, a7)));
  out[i] = __low2float(s) + __high2float(s);
}

// ---- fp64: 8 independent DFMA chains.
__global__ void dfma_loop(const float* __restrict__ in, float* __restrict__ out, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  double x = in[i], m = 0.999 - x * 1e-4;
  double a0 = x, a1 = x + 1, a2 = x + 2, a3 = x + 3, a4 = x + 4, a5 = x + 5, a6 = x + 6, a7 = x + 7;
  double c0 = x * 1e-3, c1 = c0 + 1e-3;
#pragma unroll 4
  for (int k = 0; k < iters; ++k) {
    a0 = fma(a0, m, c0); a1 = fma(a1, m, c1); a2 = fma(a2, m, c0); a3 = fma(a3, m, c1);
    a4 = fma(a4, m, c0); a5 = fma(a5, m, c1); a6 = fma(a6, m, c0); a7 = fma(a7, m, c1);
  }
  out[i] = (float)(((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)));
}

// ---- Streaming out = in * 2 + 1 with 16-byte accesses; the size decides where the output is at kernel end.
__device__ __forceinline__ void stream_body(const float4* __restrict__ in, float4* __restrict__ out, size_t n4) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= n4) return;
  float4 v = in[i];
  out[i] = make_float4(v.x * 2.f + 1.f, v.y * 2.f + 1.f, v.z * 2.f + 1.f, v.w * 2.f + 1.f);
}
// PLANTED: 16 MB written once; it stays dirty in L2, so DRAM write bytes under-count the output at kernel end.
__global__ void l2_resident_out(const float4* __restrict__ in, float4* __restrict__ out, size_t n4) {
  stream_body(in, out, n4);
}
// TWIN: the same code on 256 MB (four times the L2): the output is written back to DRAM during the kernel.
__global__ void dram_out(const float4* __restrict__ in, float4* __restrict__ out, size_t n4) {
  stream_body(in, out, n4);
}

// ---- The launch floor and the chain of tiny dependent launches.
__global__ void empty_kernel() {}
__global__ void tiny_chain_step(float* __restrict__ buf) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[i] = buf[i] * 0.5f + 1.0f;
}

// ---- Host references for --check.
float ref_sfu(float x, int iters) {
  float a = x, b = x * 0.5f + 0.25f;
  for (int k = 0; k < iters; ++k) { a = sinf(a) + cosf(b); b = expf(-0.5f * a * a) - 0.5f; }
  return a + b;
}
float ref_fadd(float x, int iters) {
  float a[8], d[8] = {x * 1e-3f, -(x * 1e-3f), x * 2e-3f, -(x * 2e-3f), x * 3e-3f, -(x * 3e-3f), x * 4e-3f,
                      -(x * 4e-3f)};
  for (int j = 0; j < 8; ++j) a[j] = x + (float)j;
  for (int k = 0; k < iters; ++k)
    for (int j = 0; j < 8; ++j) a[j] += d[j];
  return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}
float ref_ffma(float x, int iters) {
  float m = 0.999f - x * 1e-4f, c0 = x * 1e-3f, c[4] = {c0, c0 + 1e-3f, c0 + 2e-3f, c0 + 3e-3f}, a[8];
  for (int j = 0; j < 8; ++j) a[j] = x + (float)j;
  for (int k = 0; k < iters; ++k)
    for (int j = 0; j < 8; ++j) a[j] = fmaf(a[j], m, c[j & 3]);
  return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}
float ref_index(const std::vector<float>& tab, int i, int iters) {
  uint32_t h = hash32((uint32_t)i);
  float acc = 0.f;
  for (int k = 0; k < iters; ++k) acc += tab[index_step(h, k)];
  return acc;
}
float ref_hfma2(float x, int iters) {  // in float, rounded to fp16 after every step: a close, not exact, reference
  auto r = [](float v) { return __half2float(__float2half_rn(v)); };
  float m0 = r(0.75f), m1 = r(0.875f - x * 0.01f), c0 = r(x * 0.5f), c1 = r(0.25f);
  float lo[8] = {r(x), r(x), r(x), r(x), 1.f, 2.f, 3.f, 4.f}, hi[8] = {1.f, 2.f, 3.f, 4.f, r(x), r(x), r(x), r(x)};
  for (int k = 0; k < iters; ++k)
    for (int j = 0; j < 8; ++j) { lo[j] = r(fmaf(lo[j], m0, c0)); hi[j] = r(fmaf(hi[j], m1, c1)); }
  float sl = 0, sh = 0;
  for (int j = 0; j < 8; ++j) { sl += lo[j]; sh += hi[j]; }
  return sl + sh;
}
float ref_dfma(float xf, int iters) {
  double x = xf, m = 0.999 - x * 1e-4, c0 = x * 1e-3, c1 = c0 + 1e-3, a[8];
  for (int j = 0; j < 8; ++j) a[j] = x + j;
  for (int k = 0; k < iters; ++k)
    for (int j = 0; j < 8; ++j) a[j] = fma(a[j], m, (j & 1) ? c1 : c0);
  return (float)(((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])));
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? std::string(argv[1]) : "--once";
  const std::string only = only_arg(argc, argv);
  CK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const int blocks = sms * 8 * 4;  // four full waves of 256-thread blocks at 2048 threads per SM
  const size_t n = (size_t)blocks * BS;
  float* in = device_random_floats(n, 31u, 0.5f, 1.0f);
  float* out = device_alloc<float>(n, 0xFF);
  std::vector<float> htab(TAB);
  for (int j = 0; j < TAB; ++j) htab[j] = hash_float(j, 32u, -1.f, 2.f);
  float* tab = nullptr;
  CK(cudaMalloc(&tab, TAB * 4));
  CK(cudaMemcpy(tab, htab.data(), TAB * 4, cudaMemcpyHostToDevice));
  float* l2_in = device_random_floats(L2_N, 33u);
  float* l2_outb = device_alloc<float>(L2_N, 0xFF);
  float* big_in = device_random_floats(BIG_N, 34u);
  float* big_out = device_alloc<float>(BIG_N, 0xFF);
  float* chain = device_random_floats(CHAIN_N, 35u);
  CK(cudaDeviceSynchronize());

  struct K { const char* name; std::function<void()> fn; double flop, bytes; const char* what; };
  const double nd = (double)n;
  std::vector<K> ks = {
      {"sfu_loop", [&] { sfu_loop<<<blocks, BS>>>(in, out, SFU_ITERS); }, 0, 8 * nd,
       "mufu_ops = 3 * iters * threads"},
      {"fadd_loop", [&] { fadd_loop<<<blocks, BS>>>(in, out, FADD_ITERS); }, 8.0 * FADD_ITERS * nd, 8 * nd,
       "flop = FADD count (1 per lane per instruction)"},
      {"ffma_loop", [&] { ffma_loop<<<blocks, BS>>>(in, out, FFMA_ITERS); }, 16.0 * FFMA_ITERS * nd, 8 * nd,
       "flop = 2 per FFMA lane"},
      {"index_math", [&] { index_math<<<blocks, BS>>>(tab, out, IDX_ITERS); }, (double)IDX_ITERS * nd, 4 * nd + TAB * 4,
       "flop = one FADD per useful load"},
      {"hfma2_loop", [&] { hfma2_loop<<<blocks, BS>>>(in, out, HFMA_ITERS); }, 32.0 * HFMA_ITERS * nd, 8 * nd,
       "flop (fp16) = 4 per HFMA2 lane"},
      {"dfma_loop", [&] { dfma_loop<<<blocks, BS>>>(in, out, DFMA_ITERS); }, 16.0 * DFMA_ITERS * nd, 8 * nd,
       "flop (fp64) = 2 per DFMA lane"},
      {"l2_resident_out",
       [&] { l2_resident_out<<<(unsigned)(L2_N / 4 / BS), BS>>>((const float4*)l2_in, (float4*)l2_outb, L2_N / 4); },
       2.0 * L2_N, 8.0 * L2_N, "16 MB read + 16 MB written"},
      {"dram_out",
       [&] { dram_out<<<(unsigned)(BIG_N / 4 / BS), BS>>>((const float4*)big_in, (float4*)big_out, BIG_N / 4); },
       2.0 * BIG_N, 8.0 * BIG_N, "256 MB read + 256 MB written"},
      {"empty_kernel", [&] { empty_kernel<<<1, 32>>>(); }, 0, 0, "launch floor"},
      {"tiny_chain_step", [&] { tiny_chain_step<<<CHAIN_N / 128, 128>>>(chain); }, 2.0 * CHAIN_N, 8.0 * CHAIN_N,
       "one link of the chain"},
  };
  const int iters_of[] = {SFU_ITERS, FADD_ITERS, FFMA_ITERS, IDX_ITERS, HFMA_ITERS, DFMA_ITERS};
  (void)iters_of;

  if (mode == "--once") {
    for (auto& k : ks)
      if (selected(only, k.name)) { k.fn(); CKLAUNCH(); }
    CK(cudaDeviceSynchronize());
    return 0;
  }
  if (mode == "--chain") {
    empty_kernel<<<1, 32>>>();
    CKLAUNCH();
    for (int r = 0; r < CHAIN; ++r) tiny_chain_step<<<CHAIN_N / 128, 128>>>(chain);
    CKLAUNCH();
    CK(cudaDeviceSynchronize());
    return 0;
  }
  if (mode == "--bench") {
    printf("{\"device\": \"%s\", \"sms\": %d, \"blocks\": %d, \"threads\": %zu, \"l2_bytes\": %d}\n", prop.name, sms,
           blocks, n, prop.l2CacheSize);
    for (auto& k : ks) {
      char extra[256];
      snprintf(extra, sizeof extra, "\"flop\": %.0f, \"bytes_min\": %.0f, \"note\": \"%s\"", k.flop, k.bytes, k.what);
      bench_json_runs(k.name, k.fn, 25, extra);
    }
    // The chain: one event pair around 256 dependent launches, divided by 256.
    auto chain_run = [&] { for (int r = 0; r < CHAIN; ++r) tiny_chain_step<<<CHAIN_N / 128, 128>>>(chain); };
    auto empties = [&] { for (int r = 0; r < CHAIN; ++r) empty_kernel<<<1, 32>>>(); };
    for (auto pr : {std::make_pair("tiny_chain_256", std::function<void()>(chain_run)),
                    std::make_pair("empty_kernel_x256", std::function<void()>(empties))}) {
      cudaEvent_t a, b;
      CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
      pr.second(); CK(cudaDeviceSynchronize());
      std::vector<float> t;
      for (int r = 0; r < 25; ++r) {
        CK(cudaEventRecord(a)); pr.second(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms * 1000.f);
      }
      CKLAUNCH();
      std::sort(t.begin(), t.end());
      printf("{\"kernel\": \"%s\", \"launches\": %d, \"median_total_us\": %.3f, \"median_per_launch_us\": %.4f, "
             "\"min_per_launch_us\": %.4f, \"max_per_launch_us\": %.4f, \"runs\": 25}\n",
             pr.first, CHAIN, t[12], t[12] / CHAIN, t[0] / CHAIN, t[24] / CHAIN);
      CK(cudaEventDestroy(a)); CK(cudaEventDestroy(b));
    }
    return 0;
  }
  if (mode == "--check") {
    const int S = 4096;  // sampled elements
    std::vector<float> hin(n);
    CK(cudaMemcpy(hin.data(), in, n * 4, cudaMemcpyDeviceToHost));
    auto check = [&](const char* name, const std::function<void()>& run, const std::function<float(size_t)>& ref,
                     double rtol) {
      CK(cudaMemset(out, 0xFF, n * 4));
      run(); CKLAUNCH(); CK(cudaDeviceSynchronize());
      std::vector<float> h(n);
      CK(cudaMemcpy(h.data(), out, n * 4, cudaMemcpyDeviceToHost));
      double worst = 0; bool finite = true;
      for (size_t i = 0; i < n; ++i) finite = finite && std::isfinite(h[i]);
      for (int s = 0; s < S; ++s) {
        size_t i = (size_t)hash32(s + 77u) % n;
        double r = ref(i), e = fabs(h[i] - r) / std::max(1.0, fabs(r));
        worst = std::max(worst, e);
      }
      printf("{\"kernel\": \"%s\", \"sampled\": %d, \"all_written_finite\": %s, \"max_rel_err\": %.3g, \"ok\": %s}\n",
             name, S, finite ? "true" : "false", worst, finite && worst < rtol ? "true" : "false");
    };
    check("sfu_loop", ks[0].fn, [&](size_t i) { return ref_sfu(hin[i], SFU_ITERS); }, 2e-2);
    check("fadd_loop", ks[1].fn, [&](size_t i) { return ref_fadd(hin[i], FADD_ITERS); }, 1e-6);
    check("ffma_loop", ks[2].fn, [&](size_t i) { return ref_ffma(hin[i], FFMA_ITERS); }, 1e-6);
    check("index_math", ks[3].fn, [&](size_t i) { return ref_index(htab, (int)i, IDX_ITERS); }, 1e-5);
    check("hfma2_loop", ks[4].fn, [&](size_t i) { return ref_hfma2(hin[i], HFMA_ITERS); }, 2e-2);
    check("dfma_loop", ks[5].fn, [&](size_t i) { return ref_dfma(hin[i], DFMA_ITERS); }, 1e-6);
    for (int which = 0; which < 2; ++which) {
      size_t N = which ? BIG_N : L2_N;
      float *src = which ? big_in : l2_in, *dst = which ? big_out : l2_outb;
      CK(cudaMemset(dst, 0xFF, N * 4));
      ks[6 + which].fn(); CKLAUNCH(); CK(cudaDeviceSynchronize());
      std::vector<float> hi(N), ho(N);
      CK(cudaMemcpy(hi.data(), src, N * 4, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(ho.data(), dst, N * 4, cudaMemcpyDeviceToHost));
      size_t bad = 0;
      for (size_t i = 0; i < N; ++i) bad += ho[i] != hi[i] * 2.f + 1.f;
      printf("{\"kernel\": \"%s\", \"checked\": %zu, \"mismatches\": %zu, \"ok\": %s}\n", ks[6 + which].name, N, bad,
             bad ? "false" : "true");
    }
    {
      std::vector<float> h0(CHAIN_N), h1(CHAIN_N);
      CK(cudaMemcpy(h0.data(), chain, CHAIN_N * 4, cudaMemcpyDeviceToHost));
      for (int r = 0; r < CHAIN; ++r) tiny_chain_step<<<CHAIN_N / 128, 128>>>(chain);
      CKLAUNCH(); CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(h1.data(), chain, CHAIN_N * 4, cudaMemcpyDeviceToHost));
      size_t bad = 0;
      for (int i = 0; i < CHAIN_N; ++i) {
        float v = h0[i];
        for (int r = 0; r < CHAIN; ++r) v = fmaf(v, 0.5f, 1.0f);
        bad += fabsf(v - h1[i]) > 1e-6f;
      }
      printf("{\"kernel\": \"tiny_chain_256\", \"checked\": %d, \"mismatches\": %zu, \"ok\": %s}\n", CHAIN_N, bad,
             bad ? "false" : "true");
    }
    return 0;
  }
  fprintf(stderr, "usage: ceilings (--once [--only a,b] | --chain | --bench | --check)\n");
  return 2;
}
