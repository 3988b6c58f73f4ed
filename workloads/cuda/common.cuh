// Shared helpers for the ncuadvisor GPU workloads: error checks and host-side random data.
// Input data is made on the host from a hash of the index (many threads) and copied to the
// device with cudaMemcpy, so that no initialisation kernel shows up in the profiled reports.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <vector>
#include <thread>
#include <algorithm>
#include <functional>
#include <string>
#include <cuda_runtime.h>

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "CUDA error %s (%s) at %s:%d: %s\n", cudaGetErrorName(e_),                 \
              cudaGetErrorString(e_), __FILE__, __LINE__, #x);                                  \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)
#define CKLAUNCH() CK(cudaGetLastError())

// 32-bit integer hash (lowbias32), usable on host and device.
__host__ __device__ __forceinline__ uint32_t hash32(uint32_t x) {
  x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
  return x;
}
// Uniform float in [lo, lo + width), never zero for lo > 0.
__host__ __device__ __forceinline__ float hash_float(uint32_t i, uint32_t seed, float lo, float width) {
  return lo + width * (float)(hash32(i * 0x9E3779B9U + seed) >> 8) * (1.0f / 16777216.0f);
}

// The programs' "--only a,b" argument (after the mode): the kernels to run, "" for all; and whether `name` is one.
static inline std::string only_arg(int argc, char** argv) {
  std::string only;
  for (int a = 2; a + 1 < argc; ++a)
    if (std::string(argv[a]) == "--only") only = argv[a + 1];
  return only;
}
static inline bool selected(const std::string& only, const char* name) {
  if (only.empty()) return true;
  std::string s = "," + only + ",";
  return s.find("," + std::string(name) + ",") != std::string::npos;
}

// Run f(begin, end) over [0, n) on all host cores.
static inline void parallel_for(size_t n, const std::function<void(size_t, size_t)>& f) {
  unsigned nt = std::thread::hardware_concurrency();
  if (nt == 0) nt = 4;
  if (nt > 32) nt = 32;
  if (n < (1u << 16)) { f(0, n); return; }
  std::vector<std::thread> ts;
  size_t chunk = (n + nt - 1) / nt;
  for (unsigned t = 0; t < nt; ++t) {
    size_t b = t * chunk, e = b + chunk < n ? b + chunk : n;
    if (b >= e) break;
    ts.emplace_back(f, b, e);
  }
  for (auto& th : ts) th.join();
}

// Device buffer of n floats in [lo, lo+width), random (hash of the index), copied from the host.
static inline float* device_random_floats(size_t n, uint32_t seed, float lo = 0.5f, float width = 1.0f) {
  std::vector<float> h(n);
  parallel_for(n, [&](size_t b, size_t e) { for (size_t i = b; i < e; ++i) h[i] = hash_float((uint32_t)i, seed, lo, width); });
  float* d = nullptr;
  CK(cudaMalloc(&d, n * sizeof(float)));
  CK(cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}
template <class T>
static inline T* device_alloc(size_t n, int fill_byte = 0) {
  T* d = nullptr;
  CK(cudaMalloc(&d, n * sizeof(T)));
  CK(cudaMemset(d, fill_byte, n * sizeof(T)));
  return d;
}

// Largest |a[i] - b[i]| over n device floats (the --check modes: a planted kernel against its twin).
static inline double max_abs_diff(const float* a, const float* b, size_t n) {
  std::vector<float> h1(n), h2(n);
  CK(cudaMemcpy(h1.data(), a, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(h2.data(), b, n * 4, cudaMemcpyDeviceToHost));
  double md = 0;
  for (size_t i = 0; i < n; ++i) md = std::max(md, (double)fabsf(h1[i] - h2[i]));
  return md;
}

// The --bench modes: 3 warm-ups, then the median of 15 cudaEvent timings of launch(), one JSON line.
static inline void bench_json(const char* name, const std::function<void()>& launch) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) launch();
  CK(cudaGetLastError());
  std::vector<float> t;
  for (int i = 0; i < 15; ++i) {
    CK(cudaEventRecord(a)); launch(); CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms; CK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms * 1000.f);
  }
  std::sort(t.begin(), t.end());
  printf("{\"kernel\": \"%s\", \"median_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f, \"runs\": 15}\n", name, t[7],
         t[0], t[14]);
  CK(cudaEventDestroy(a)); CK(cudaEventDestroy(b));
}

// The --bench modes of ceilings.cu and patterns.cu: `warmups` untimed launches, then the median of `runs`
// cudaEvent timings of launch() (each timing spans one call of launch(), which may hold several kernel launches).
// One JSON line: name, median/min/max, runs, and `extra` (a JSON fragment without braces, e.g. "\"role\": \"twin\"").
// Returns the median in microseconds.
static inline double bench_json_runs(const char* name, const std::function<void()>& launch, int runs = 25,
                                     const std::string& extra = std::string(), int warmups = 3) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  for (int i = 0; i < warmups; ++i) launch();
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<float> t;
  for (int i = 0; i < runs; ++i) {
    CK(cudaEventRecord(a)); launch(); CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms; CK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms * 1000.f);
  }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  double med = runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]);
  printf("{\"kernel\": \"%s\", \"median_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f, \"runs\": %d%s%s}\n", name, med,
         t[0], t[runs - 1], runs, extra.empty() ? "" : ", ", extra.c_str());
  fflush(stdout);
  CK(cudaEventDestroy(a)); CK(cudaEventDestroy(b));
  return med;
}
