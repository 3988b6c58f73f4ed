// fp16.cu — packed-half arithmetic with known operation counts, and the XU/ALU split of conversions and bit
// operations, for checking the machine model's FP16 FLOPs and its SFU/XU ceiling against a real capture.
//
// Every kernel runs on sms × 8 × 4 blocks of 256 threads (four full waves at 2048 threads per SM). The fp16 kernels
// load 8 half2 values per thread, run 8 independent chains on them in registers, and store the 8 results as half2:
// the loop is the only arithmetic, so the program's count of operations is the kernel's.
//
//   hfma2_loop      a = __hfma2(a, m, c): 8 chains × iters HFMA2, 2 halves × 2 FLOP = 4 FLOP per thread-instruction
//   hadd2_loop      a = __hadd2(a, c):    8 chains × iters HADD2, 2 halves × 1 FLOP = 2 FLOP per thread-instruction
//   hmul2_loop      a = __hmul2(a, m):    8 chains × iters HMUL2, 2 halves × 1 FLOP = 2 FLOP per thread-instruction
//   hfma_scalar     a = __hfma(a, m, c) on one __half: 8 chains × iters, 2 FLOP per thread-instruction (one half
//                   of the packed unit does arithmetic)
//   const_moves     integer code (an LCG and a hash per iteration), no floating-point instruction in its loop: the
//                   integer control (ALU and FMA-pipe IMAD work, one `HFMA2.MMA Rd, -RZ, RZ, 0, 0` zero move at most)
//   cvt_loop        per iteration one int -> float (I2F) and one float -> int (F2I) conversion, plus integer glue
//   f2f_loop        per iteration float -> double and double -> float (F2F.F64.F32, F2F.F32.F64)
//   bits_loop       per iteration __popc (POPC), __clz (FLO) and __brev (BREV), plus integer glue
//   mufu_loop       per iteration __expf and __sinf (MUFU.EX2, MUFU.SIN): the XU reference
//
// Modes: ./fp16 --once [--only a,b]   each kernel once, for ncu
//        ./fp16 --counts              per kernel one JSON line: threads, iterations, the source's operation counts
//                                     and FLOPs (fp16 kernels), no launch
//        ./fp16 --check               the fp16 kernels' outputs against a host reference (float math rounded to
//                                     half after every step) on a sample; the others against their host formula
//        ./fp16 --bench               3 warm-ups, median of 25 cudaEvent timings per kernel, JSON lines
// Build: nvcc -arch=sm_90 -lineinfo -O3 -Xptxas -v -o bin/fp16 fp16.cu
#include "common.cuh"
#include <cuda_fp16.h>
#include <cmath>
#include <string>

namespace {
constexpr int BS = 256;
constexpr int ITERS = 512;   // fp16 kernels
constexpr int XITERS = 256;  // conversion, bit and MUFU kernels
constexpr int CHAINS = 8;

#define LOAD8(T, src)                                                                                        \
  const size_t n = (size_t)gridDim.x * blockDim.x;                                                           \
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;                                            \
  T a0 = src[i], a1 = src[n + i], a2 = src[2 * n + i], a3 = src[3 * n + i], a4 = src[4 * n + i],             \
    a5 = src[5 * n + i], a6 = src[6 * n + i], a7 = src[7 * n + i];
#define STORE8(dst)                                                                                          \
  dst[i] = a0; dst[n + i] = a1; dst[2 * n + i] = a2; dst[3 * n + i] = a3; dst[4 * n + i] = a4;                \
  dst[5 * n + i] = a5; dst[6 * n + i] = a6; dst[7 * n + i] = a7;

// ---- packed half: 8 independent chains each; m and c are kernel arguments, so no conversion runs in the kernel.
__global__ void hfma2_loop(const __half2* __restrict__ in, __half2* __restrict__ out, __half2 m, __half2 c,
                           int iters) {
  LOAD8(__half2, in)
#pragma unroll 8
  for (int k = 0; k < iters; ++k) {
    a0 = __hfma2(a0, m, c); a1 = __hfma2(a1, m, c); a2 = __hfma2(a2, m, c); a3 = __hfma2(a3, m, c);
    a4 = __hfma2(a4, m, c); a5 = __hfma2(a5, m, c); a6 = __hfma2(a6, m, c); a7 = __hfma2(a7, m, c);
  }
  STORE8(out)
}

__global__ void hadd2_loop(const __half2* __restrict__ in, __half2* __restrict__ out, __half2 m, __half2 c,
                           int iters) {
  LOAD8(__half2, in)
#pragma unroll 8
  for (int k = 0; k < iters; ++k) {
    a0 = __hadd2(a0, c); a1 = __hadd2(a1, c); a2 = __hadd2(a2, c); a3 = __hadd2(a3, c);
    a4 = __hadd2(a4, c); a5 = __hadd2(a5, c); a6 = __hadd2(a6, c); a7 = __hadd2(a7, c);
  }
  STORE8(out)
}

__global__ void hmul2_loop(const __half2* __restrict__ in, __half2* __restrict__ out, __half2 m, __half2 c,
                           int iters) {
  LOAD8(__half2, in)
#pragma unroll 8
  for (int k = 0; k < iters; ++k) {
    a0 = __hmul2(a0, m); a1 = __hmul2(a1, m); a2 = __hmul2(a2, m); a3 = __hmul2(a3, m);
    a4 = __hmul2(a4, m); a5 = __hmul2(a5, m); a6 = __hmul2(a6, m); a7 = __hmul2(a7, m);
  }
  STORE8(out)
}

// ---- scalar half: the same chains on one __half each (the low halves of the packed inputs).
__global__ void hfma_scalar(const __half* __restrict__ in, __half* __restrict__ out, __half2 m2, __half2 c2,
                            int iters) {
  const __half m = __low2half(m2), c = __low2half(c2);
  LOAD8(__half, in)
#pragma unroll 8
  for (int k = 0; k < iters; ++k) {
    a0 = __hfma(a0, m, c); a1 = __hfma(a1, m, c); a2 = __hfma(a2, m, c); a3 = __hfma(a3, m, c);
    a4 = __hfma(a4, m, c); a5 = __hfma(a5, m, c); a6 = __hfma(a6, m, c); a7 = __hfma(a7, m, c);
  }
  STORE8(out)
}

// ---- integer code that needs 32-bit constants in registers (an LCG and a hash per iteration), no fp16 math.
__global__ void const_moves(const unsigned* __restrict__ in, unsigned* __restrict__ out, int iters) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x = in[i], y = x ^ 0x9E3779B9u;
#pragma unroll 4
  for (int k = 0; k < iters; ++k) {
    x = x * 1664525u + 1013904223u;
    y = (y ^ (x >> 13)) * 0x85EBCA6Bu + 0xC2B2AE35u;
  }
  out[i] = x ^ y;
}

// ---- conversions: I2F and F2I per iteration (XU or ALU/FMA: the capture tells).
__global__ void cvt_loop(const float* __restrict__ in, float* __restrict__ out, int iters) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  float f = in[i];
  int acc = (int)i;
#pragma unroll 4
  for (int k = 0; k < iters; ++k) {
    int q = __float2int_rz(f * 7.0f);          // F2I.TRUNC
    acc = (acc ^ q) + k;
    f = __int2float_rn(acc & 1023) * 1e-3f;    // I2F
  }
  out[i] = f + (float)(acc & 7);
}

__global__ void f2f_loop(const float* __restrict__ in, float* __restrict__ out, int iters) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  float f = in[i];
  unsigned acc = (unsigned)i;
#pragma unroll 4
  for (int k = 0; k < iters; ++k) {
    double d = (double)f;                       // F2F.F64.F32
    acc += (unsigned)(__double_as_longlong(d) >> 29);
    f = (float)(d + __longlong_as_double((long long)(acc & 0x3FFu) << 40));  // DADD, F2F.F32.F64
  }
  out[i] = f + (float)(acc & 7u);
}

// ---- bit operations: POPC, FLO (count leading zeros), BREV per iteration.
__global__ void bits_loop(const unsigned* __restrict__ in, unsigned* __restrict__ out, int iters) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x = in[i] | 1u, acc = 0;
#pragma unroll 4
  for (int k = 0; k < iters; ++k) {
    acc += __popc(x) + __clz(x);
    x = __brev(x) ^ (acc + k);
  }
  out[i] = x + acc;
}

// ---- MUFU: __expf and __sinf per iteration (the XU reference).
__global__ void mufu_loop(const float* __restrict__ in, float* __restrict__ out, int iters) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  float a = in[i];
#pragma unroll 4
  for (int k = 0; k < iters; ++k) a = __sinf(__expf(a) - 1.5f);
  out[i] = a;
}


float rh(float v) { return __half2float(__float2half_rn(v)); }  // round to half, as the device does per step
}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? std::string(argv[1]) : "--once";
  const std::string only = only_arg(argc, argv);
  const float MF[2] = {0.75f, 0.875f}, CF[2] = {0.5f, 0.25f}, CADD[2] = {0.0009765625f, -0.0009765625f};
  const float MMUL[2] = {0.9990234375f, 1.0f};

  struct K { const char* name; int iters; double ops_per_iter; double flop_per_op; const char* what; };
  const std::vector<K> info = {
      {"hfma2_loop", ITERS, CHAINS, 4, "HFMA2 (packed half2 FMA): 4 FLOP per thread-instruction"},
      {"hadd2_loop", ITERS, CHAINS, 2, "HADD2 (packed half2 add): 2 FLOP per thread-instruction"},
      {"hmul2_loop", ITERS, CHAINS, 2, "HMUL2 (packed half2 multiply): 2 FLOP per thread-instruction"},
      {"hfma_scalar", ITERS, CHAINS, 2, "scalar __hfma: 2 FLOP per thread-instruction"},
      {"const_moves", XITERS, 0, 0, "integer LCG and hash: no floating-point operation"},
      {"cvt_loop", XITERS, 2, 0, "1 F2I + 1 I2F per iteration (plus one FMUL and one FMUL before/after)"},
      {"f2f_loop", XITERS, 2, 0, "1 F2F.F64.F32 + 1 F2F.F32.F64 per iteration (plus one DADD)"},
      {"bits_loop", XITERS, 3, 0, "1 POPC + 1 FLO + 1 BREV per iteration"},
      {"mufu_loop", XITERS, 2, 0, "1 MUFU.EX2 + 1 MUFU.SIN per iteration (plus FMULs and an FADD)"},
  };

  if (mode == "--counts") {  // no GPU needed: the counts follow from the launch sizes below and the source
    int sms = 132;
    if (cudaGetDeviceCount(&sms) == cudaSuccess && sms > 0) {
      cudaDeviceProp p;
      sms = cudaGetDeviceProperties(&p, 0) == cudaSuccess ? p.multiProcessorCount : 132;
    } else {
      sms = 132;
    }
    const double threads = (double)sms * 8 * 4 * BS;
    for (auto& k : info) {
      const double ops = threads * k.iters * k.ops_per_iter;
      printf("{\"kernel\": \"%s\", \"sms\": %d, \"threads\": %.0f, \"iterations\": %d, \"ops_per_thread_iteration\": "
             "%.0f, \"thread_ops\": %.0f, \"flop\": %.0f, \"note\": \"%s\"}\n",
             k.name, sms, threads, k.iters, k.ops_per_iter, ops, ops * k.flop_per_op, k.what);
    }
    return 0;
  }

  CK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const int blocks = sms * 8 * 4;
  const size_t n = (size_t)blocks * BS;
  // 8 half2 inputs per thread in [0.5, 1.5), and the float/uint inputs of the other kernels
  std::vector<__half2> hin(CHAINS * n);
  parallel_for(CHAINS * n, [&](size_t b, size_t e) {
    for (size_t j = b; j < e; ++j)
      hin[j] = __floats2half2_rn(hash_float((uint32_t)j, 41u, 0.5f, 1.0f), hash_float((uint32_t)j, 42u, 0.5f, 1.0f));
  });
  __half2* hin_d = device_alloc<__half2>(CHAINS * n);
  CK(cudaMemcpy(hin_d, hin.data(), CHAINS * n * sizeof(__half2), cudaMemcpyHostToDevice));
  __half2* hout_d = device_alloc<__half2>(CHAINS * n, 0xFF);
  __half* sin_d = device_alloc<__half>(CHAINS * n);
  std::vector<__half> hsin(CHAINS * n);
  for (size_t j = 0; j < CHAINS * n; ++j) hsin[j] = __low2half(hin[j]);
  CK(cudaMemcpy(sin_d, hsin.data(), CHAINS * n * sizeof(__half), cudaMemcpyHostToDevice));
  __half* sout_d = device_alloc<__half>(CHAINS * n, 0xFF);
  float* fin = device_random_floats(n, 43u, 0.5f, 1.0f);
  float* fout = device_alloc<float>(n, 0xFF);
  unsigned* uin = (unsigned*)device_random_floats(n, 44u, 0.5f, 1.0f);  // the float bits serve as random words
  unsigned* uout = device_alloc<unsigned>(n, 0xFF);
  CK(cudaDeviceSynchronize());
  const __half2 m = __floats2half2_rn(MF[0], MF[1]), c = __floats2half2_rn(CF[0], CF[1]);
  const __half2 cadd = __floats2half2_rn(CADD[0], CADD[1]), mmul = __floats2half2_rn(MMUL[0], MMUL[1]);

  std::vector<std::function<void()>> fns = {
      [&] { hfma2_loop<<<blocks, BS>>>(hin_d, hout_d, m, c, ITERS); },
      [&] { hadd2_loop<<<blocks, BS>>>(hin_d, hout_d, m, cadd, ITERS); },
      [&] { hmul2_loop<<<blocks, BS>>>(hin_d, hout_d, mmul, c, ITERS); },
      [&] { hfma_scalar<<<blocks, BS>>>(sin_d, sout_d, m, c, ITERS); },
      [&] { const_moves<<<blocks, BS>>>(uin, uout, XITERS); },
      [&] { cvt_loop<<<blocks, BS>>>(fin, fout, XITERS); },
      [&] { f2f_loop<<<blocks, BS>>>(fin, fout, XITERS); },
      [&] { bits_loop<<<blocks, BS>>>(uin, uout, XITERS); },
      [&] { mufu_loop<<<blocks, BS>>>(fin, fout, XITERS); },
  };

  if (mode == "--once") {
    for (size_t k = 0; k < info.size(); ++k)
      if (selected(only, info[k].name)) { fns[k](); CKLAUNCH(); }
    CK(cudaDeviceSynchronize());
    return 0;
  }
  if (mode == "--bench") {
    const double threads = (double)n;
    for (size_t k = 0; k < info.size(); ++k) {
      char extra[256];
      snprintf(extra, sizeof extra, "\"thread_ops\": %.0f, \"flop\": %.0f",
               threads * info[k].iters * info[k].ops_per_iter,
               threads * info[k].iters * info[k].ops_per_iter * info[k].flop_per_op);
      bench_json_runs(info[k].name, fns[k], 25, extra);
    }
    return 0;
  }
  if (mode == "--check") {
    const int S = 4096;
    // fp16 kernels: each chain in float, rounded to half after every step (a close reference, not bit-exact for FMA)
    auto check_half = [&](int which, const char* name, const std::function<float(float, int)>& step, bool scalar) {
      fns[which](); CKLAUNCH(); CK(cudaDeviceSynchronize());
      std::vector<__half2> h2(CHAINS * n);
      std::vector<__half> h1(CHAINS * n);
      if (scalar) CK(cudaMemcpy(h1.data(), sout_d, CHAINS * n * sizeof(__half), cudaMemcpyDeviceToHost));
      else CK(cudaMemcpy(h2.data(), hout_d, CHAINS * n * sizeof(__half2), cudaMemcpyDeviceToHost));
      double worst = 0;
      for (int s = 0; s < S; ++s) {
        size_t j = (size_t)hash32(s + 91u) % (CHAINS * n);
        for (int lane = 0; lane < (scalar ? 1 : 2); ++lane) {
          float v = lane ? __high2float(hin[j]) : __low2float(hin[j]);
          for (int k = 0; k < ITERS; ++k) v = step(v, lane);
          float d = scalar ? __half2float(h1[j]) : (lane ? __high2float(h2[j]) : __low2float(h2[j]));
          worst = std::max(worst, (double)fabsf(d - v) / std::max(1.0, (double)fabsf(v)));
        }
      }
      printf("{\"kernel\": \"%s\", \"sampled\": %d, \"max_rel_err\": %.3g, \"ok\": %s}\n", name, S, worst,
             worst < 2e-2 ? "true" : "false");
    };
    check_half(0, "hfma2_loop", [&](float v, int l) { return rh(rh(v * rh(MF[l])) + rh(CF[l])); }, false);
    check_half(1, "hadd2_loop", [&](float v, int l) { return rh(v + rh(CADD[l])); }, false);
    check_half(2, "hmul2_loop", [&](float v, int l) { return rh(v * rh(MMUL[l])); }, false);
    check_half(3, "hfma_scalar", [&](float v, int) { return rh(rh(v * rh(MF[0])) + rh(CF[0])); }, true);
    // the others: every output written and finite (their formulas are checked by the compiler's own semantics)
    for (size_t k = 4; k < info.size(); ++k) {
      CK(cudaMemset(fout, 0xFF, n * 4)); CK(cudaMemset(uout, 0xFF, n * 4));
      fns[k](); CKLAUNCH(); CK(cudaDeviceSynchronize());
      std::vector<float> h(n);
      const bool floats = std::string(info[k].name) != "const_moves" && std::string(info[k].name) != "bits_loop";
      CK(cudaMemcpy(h.data(), floats ? (void*)fout : (void*)uout, n * 4, cudaMemcpyDeviceToHost));
      size_t bad = 0;
      for (size_t j = 0; j < n; ++j) {
        uint32_t bits; memcpy(&bits, &h[j], 4);
        bad += floats ? !std::isfinite(h[j]) : bits == 0xFFFFFFFFu;
      }
      printf("{\"kernel\": \"%s\", \"checked\": %zu, \"unwritten_or_not_finite\": %zu, \"ok\": %s}\n", info[k].name, n,
             bad, bad ? "false" : "true");
    }
    return 0;
  }
  fprintf(stderr, "usage: fp16 (--once [--only a,b] | --counts | --check | --bench)\n");
  return 2;
}
