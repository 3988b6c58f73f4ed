// patterns.cu — hand-written memory-access and launch patterns, each planted kernel with a fixed twin measured the
// same way, so that an estimated saving can be checked against a measured one.
//
//   PLANTED aos_field_x        out[i] = p[i].x * 2 + 1 over 16 M structs of 8 floats (32 B): each thread needs 4 B
//                              but every load pulls the struct's whole 32-byte sector (512 MB moved for 64 MB used)
//   TWIN    soa_field_x        the same over the x array alone (structure of arrays)
//   PLANTED aos16_scalar       out[i] = x + y + z + w of a 16-byte struct with 4-byte alignment: four 32-bit loads
//                              per thread, each warp-wide load spanning 512 B (4 B of every 16 used per request)
//   TWIN    aos16_vec4         the same struct read with one 16-byte load (LDG.128)
//   PLANTED pred_store_strided for 4 elements per thread: if (v > 0.5) out[8 * i] = 2 v: a predicated store
//                              (@P STG) with a stride of 32 B, one sector written per stored element
//   TWIN    pred_store_contig  the same condition, out[i] = 2 v (contiguous)
//   PLANTED gather_random      out[i] = tab[idx[i]], 16 M random indices into a 128 MB table
//   TWIN    gather_sorted      the same index values sorted (neighbouring threads read neighbouring elements);
//                              gather_random's idx is gather_sorted's permuted: out_random[i] = out_sorted[perm(i)]
//   PLANTED chase_serial       each of 16,896 threads walks 4 linked lists (32 steps each) one after the other:
//                              one dependent load in flight per thread
//   TWIN    chase_interleaved  the same 4 walks interleaved step by step: 4 independent loads in flight per thread
//   PLANTED reduce_mod         per-block shared-memory tree sum of 256 floats selecting active threads with
//                              tid % (2 * s) == 0 (divergent warps, an integer modulo by a variable per step)
//   TWIN    reduce_shfl        sequential addressing (tid < s) down to 32, then __shfl_down_sync
//   PLANTED small_update ×4    four launches of a small kernel (8 blocks × 256 threads on 2,048 floats), each applying
//                              one y = y * a + b step
//   TWIN    small_fused        one launch applying the four steps in registers
//
// Modes: ./patterns --once [--only a,b]   each kernel once (small_update 4 times), for ncu; the twin small_fused
//                                         first, at the program's start, then the rest in the order above, so that
//                                         the four small_update launches make a run of tiny launches alone (until
//                                         2026-12-06 the twin followed them: the run held five launches, not the four
//                                         the bench times against one). With --only, select a kernel of the
//                                         others too, to keep a long kernel between the twin and the updates.
//        ./patterns --bench               3 warm-ups, median of 25 cudaEvent timings, JSON lines
//                                         (small_update_x4: one timing spans the four launches)
//        ./patterns --check               each planted kernel against its twin, JSON lines
// Build: nvcc -arch=sm_90 -lineinfo -O3 -Xptxas -v -o bin/patterns patterns.cu
#include "common.cuh"
#include <cmath>
#include <string>

namespace {
constexpr int BS = 256;
constexpr size_t N_AOS = (size_t)16 << 20;    // 16 M structs of 32 B = 512 MB
constexpr size_t N_AOS16 = (size_t)16 << 20;  // 16 M structs of 16 B = 256 MB
constexpr size_t N_PRED = (size_t)16 << 20;   // 16 M floats in; strided output 512 MB
constexpr int PRED_STRIDE = 8, PRED_PER_THREAD = 4;
constexpr size_t N_TAB = (size_t)32 << 20;    // gather table: 32 M floats = 128 MB
constexpr size_t N_GATHER = (size_t)16 << 20; // 16 M gathers
constexpr uint32_t PERM_A = 0x9E3779B5u, PERM_B = 0x7F4A7C15u;  // odd multiplier ≡ 1 (mod 4), odd increment
constexpr size_t N_CHASE = (size_t)32 << 20;  // 32 M nodes (128 MB), next[] one LCG cycle
constexpr int CHASE_WALKS = 4, CHASE_STEPS = 32;
constexpr size_t N_RED = (size_t)32 << 20;    // 32 M floats = 128 MB, 131,072 block sums
constexpr int N_SMALL = 2048, SMALL_LAUNCHES = 4;
__constant__ float SMALL_A[SMALL_LAUNCHES] = {0.5f, 1.25f, 0.75f, 1.5f};
__constant__ float SMALL_B[SMALL_LAUNCHES] = {1.0f, -0.5f, 0.25f, 2.0f};
const float H_SMALL_A[SMALL_LAUNCHES] = {0.5f, 1.25f, 0.75f, 1.5f};
const float H_SMALL_B[SMALL_LAUNCHES] = {1.0f, -0.5f, 0.25f, 2.0f};

struct P8 { float x, y, z, w, u, v, s, t; };  // 32 B
struct P4 { float x, y, z, w; };              // 16 B, 4-byte aligned: no 16-byte load possible

// A bijection of [0, n) for n a power of two (a full-period LCG step): the planted gather's permutation and the
// chase's next[] are both made of it.
__host__ __device__ __forceinline__ uint32_t lcg(uint32_t i, uint32_t mask) { return (i * PERM_A + PERM_B) & mask; }

// ---- Array of structs vs. structure of arrays
__global__ void aos_field_x(const P8* __restrict__ p, float* __restrict__ out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = p[i].x * 2.f + 1.f;  // 4 B used of each 32-byte sector fetched
}
__global__ void soa_field_x(const float* __restrict__ x, float* __restrict__ out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] * 2.f + 1.f;
}
__global__ void aos16_scalar(const P4* __restrict__ p, float* __restrict__ out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) {
    P4 q = p[i];  // four LDG.E.32 (the struct is only 4-byte aligned)
    out[i] = (q.x + q.y) + (q.z + q.w);
  }
}
__global__ void aos16_vec4(const float4* __restrict__ p, float* __restrict__ out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) {
    float4 q = p[i];  // one LDG.E.128
    out[i] = (q.x + q.y) + (q.z + q.w);
  }
}

// ---- Predicated stores: 4 elements per thread (grid-stride), a store under a data-dependent condition.
__global__ void pred_store_strided(const float* __restrict__ in, float* __restrict__ out, size_t n) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
#pragma unroll
  for (int k = 0; k < PRED_PER_THREAD; ++k, i += stride) {
    float v = in[i];
    if (v > 0.5f) out[i * PRED_STRIDE] = v * 2.f;  // @P STG: one 32-byte sector per stored float
  }
}
__global__ void pred_store_contig(const float* __restrict__ in, float* __restrict__ out, size_t n) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
#pragma unroll
  for (int k = 0; k < PRED_PER_THREAD; ++k, i += stride) {
    float v = in[i];
    if (v > 0.5f) out[i] = v * 2.f;
  }
}

// ---- Gathers
__global__ void gather_random(const float* __restrict__ tab, const uint32_t* __restrict__ idx, float* __restrict__ out,
                              size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = tab[idx[i]];
}
__global__ void gather_sorted(const float* __restrict__ tab, const uint32_t* __restrict__ idx, float* __restrict__ out,
                              size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = tab[idx[i]];
}

// ---- Pointer chase: 4 walks per thread, `steps` steps each (a runtime count, so the walks stay separate loops).
__global__ void chase_serial(const uint32_t* __restrict__ next, uint32_t* __restrict__ out, int steps) {
  uint32_t t = blockIdx.x * blockDim.x + threadIdx.x, acc = 0;
  for (int w = 0; w < CHASE_WALKS; ++w) {
    uint32_t p = hash32(t * CHASE_WALKS + w) & (uint32_t)(N_CHASE - 1);
    for (int k = 0; k < steps; ++k) p = next[p];  // one dependent load in flight
    acc ^= p * (w + 1);
  }
  out[t] = acc;
}
__global__ void chase_interleaved(const uint32_t* __restrict__ next, uint32_t* __restrict__ out, int steps) {
  uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t p[CHASE_WALKS];
#pragma unroll
  for (int w = 0; w < CHASE_WALKS; ++w) p[w] = hash32(t * CHASE_WALKS + w) & (uint32_t)(N_CHASE - 1);
  for (int k = 0; k < steps; ++k) {
#pragma unroll
    for (int w = 0; w < CHASE_WALKS; ++w) p[w] = next[p[w]];  // four independent loads in flight
  }
  uint32_t acc = 0;
#pragma unroll
  for (int w = 0; w < CHASE_WALKS; ++w) acc ^= p[w] * (w + 1);
  out[t] = acc;
}

// ---- Block reductions of 256 floats
__global__ void reduce_mod(const float* __restrict__ in, float* __restrict__ out) {
  __shared__ float s[BS];
  unsigned tid = threadIdx.x;
  s[tid] = in[blockIdx.x * (size_t)BS + tid];
  __syncthreads();
  for (unsigned st = 1; st < blockDim.x; st *= 2) {
    if (tid % (2 * st) == 0) s[tid] += s[tid + st];  // divergent; integer modulo by a variable
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}
__global__ void reduce_shfl(const float* __restrict__ in, float* __restrict__ out) {
  __shared__ float s[BS];
  unsigned tid = threadIdx.x;
  s[tid] = in[blockIdx.x * (size_t)BS + tid];
  __syncthreads();
  for (unsigned st = blockDim.x / 2; st >= 32; st >>= 1) {  // sequential addressing: whole warps stay active
    if (tid < st) s[tid] += s[tid + st];
    __syncthreads();
  }
  if (tid < 32) {
    float v = s[tid];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (tid == 0) out[blockIdx.x] = v;
  }
}

// ---- A handful of small launches vs. one fused launch
__global__ void small_update(float* __restrict__ y, int step) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N_SMALL) y[i] = fmaf(y[i], SMALL_A[step], SMALL_B[step]);
}
__global__ void small_fused(float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N_SMALL) {
    float v = y[i];
#pragma unroll
    for (int s = 0; s < SMALL_LAUNCHES; ++s) v = fmaf(v, SMALL_A[s], SMALL_B[s]);
    y[i] = v;
  }
}

unsigned blocks_for(size_t n) { return (unsigned)((n + BS - 1) / BS); }
template <class T>
T* to_device(const std::vector<T>& h) {
  T* d = nullptr;
  CK(cudaMalloc(&d, h.size() * sizeof(T)));
  CK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}
template <class T>
std::vector<T> to_host(const T* d, size_t n) {
  std::vector<T> h(n);
  CK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}
}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? std::string(argv[1]) : "--once";
  const std::string only = only_arg(argc, argv);
  CK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;

  // AoS (32 B) and its x field as an array; the 16-byte structs
  float* aos = device_random_floats(N_AOS * 8, 41u);
  float* soa_x = nullptr;
  {
    std::vector<float> hx(N_AOS);
    parallel_for(N_AOS, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) hx[i] = hash_float((uint32_t)(i * 8), 41u, 0.5f, 1.0f);
    });
    soa_x = to_device(hx);
  }
  float* aos16 = device_random_floats(N_AOS16 * 4, 42u);
  float* out_a = device_alloc<float>(N_AOS, 0xFF);
  float* out_b = device_alloc<float>(N_AOS, 0xFF);
  // predicated stores
  float* pin = device_random_floats(N_PRED, 43u, 0.0f, 1.0f);
  float* pout_s = device_alloc<float>(N_PRED * PRED_STRIDE, 0xFF);
  float* pout_c = device_alloc<float>(N_PRED, 0xFF);
  // gathers: sorted indices 2j + (hash & 1) (strictly increasing, < N_TAB), random = sorted permuted by lcg
  float* tab = device_random_floats(N_TAB, 44u);
  std::vector<uint32_t> hs(N_GATHER), hr(N_GATHER);
  parallel_for(N_GATHER, [&](size_t b, size_t e) {
    for (size_t j = b; j < e; ++j) hs[j] = (uint32_t)(2 * j + (hash32((uint32_t)j + 45u) & 1u));
  });
  parallel_for(N_GATHER, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) hr[i] = hs[lcg((uint32_t)i, (uint32_t)(N_GATHER - 1))];
  });
  uint32_t* idx_sorted = to_device(hs);
  uint32_t* idx_random = to_device(hr);
  // chase: next[i] = lcg(i), one cycle through all N_CHASE nodes
  uint32_t* next = nullptr;
  {
    std::vector<uint32_t> hn(N_CHASE);
    parallel_for(N_CHASE, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) hn[i] = lcg((uint32_t)i, (uint32_t)(N_CHASE - 1));
    });
    next = to_device(hn);
  }
  const unsigned chase_blocks = sms, chase_threads = 128;  // 16,896 threads on 132 SMs
  const size_t n_chase_threads = (size_t)chase_blocks * chase_threads;
  uint32_t* cout_a = device_alloc<uint32_t>(n_chase_threads, 0xFF);
  uint32_t* cout_b = device_alloc<uint32_t>(n_chase_threads, 0xFF);
  // reductions
  float* rin = device_random_floats(N_RED, 46u, -1.0f, 2.0f);
  float* rout_a = device_alloc<float>(N_RED / BS, 0xFF);
  float* rout_b = device_alloc<float>(N_RED / BS, 0xFF);
  // small launches
  float* ys = device_random_floats(N_SMALL, 47u);
  float* yf = nullptr;
  CK(cudaMalloc(&yf, N_SMALL * 4));
  CK(cudaMemcpy(yf, ys, N_SMALL * 4, cudaMemcpyDeviceToDevice));
  CK(cudaDeviceSynchronize());

  auto small_x4 = [&](float* y) {
    for (int s = 0; s < SMALL_LAUNCHES; ++s) small_update<<<N_SMALL / BS, BS>>>(y, s);
  };
  struct K { const char* name; const char* role; const char* pair; std::function<void()> fn; double bytes_min; };
  const unsigned pred_blocks = (unsigned)(N_PRED / PRED_PER_THREAD / BS);
  std::vector<K> ks = {
      {"aos_field_x", "planted", "aos", [&] { aos_field_x<<<blocks_for(N_AOS), BS>>>((const P8*)aos, out_a, N_AOS); },
       8.0 * N_AOS},
      {"soa_field_x", "twin", "aos", [&] { soa_field_x<<<blocks_for(N_AOS), BS>>>(soa_x, out_b, N_AOS); }, 8.0 * N_AOS},
      {"aos16_scalar", "planted", "aos16",
       [&] { aos16_scalar<<<blocks_for(N_AOS16), BS>>>((const P4*)aos16, out_a, N_AOS16); }, 20.0 * N_AOS16},
      {"aos16_vec4", "twin", "aos16",
       [&] { aos16_vec4<<<blocks_for(N_AOS16), BS>>>((const float4*)aos16, out_b, N_AOS16); }, 20.0 * N_AOS16},
      {"pred_store_strided", "planted", "pred_store",
       [&] { pred_store_strided<<<pred_blocks, BS>>>(pin, pout_s, N_PRED); }, 4.0 * N_PRED + 2.0 * N_PRED},
      {"pred_store_contig", "twin", "pred_store", [&] { pred_store_contig<<<pred_blocks, BS>>>(pin, pout_c, N_PRED); },
       4.0 * N_PRED + 2.0 * N_PRED},
      {"gather_random", "planted", "gather",
       [&] { gather_random<<<blocks_for(N_GATHER), BS>>>(tab, idx_random, out_a, N_GATHER); }, 12.0 * N_GATHER},
      {"gather_sorted", "twin", "gather",
       [&] { gather_sorted<<<blocks_for(N_GATHER), BS>>>(tab, idx_sorted, out_b, N_GATHER); }, 12.0 * N_GATHER},
      {"chase_serial", "planted", "chase",
       [&] { chase_serial<<<chase_blocks, chase_threads>>>(next, cout_a, CHASE_STEPS); },
       4.0 * n_chase_threads * CHASE_WALKS * CHASE_STEPS},
      {"chase_interleaved", "twin", "chase",
       [&] { chase_interleaved<<<chase_blocks, chase_threads>>>(next, cout_b, CHASE_STEPS); },
       4.0 * n_chase_threads * CHASE_WALKS * CHASE_STEPS},
      {"reduce_mod", "planted", "reduce", [&] { reduce_mod<<<(unsigned)(N_RED / BS), BS>>>(rin, rout_a); },
       4.0 * N_RED + 4.0 * N_RED / BS},
      {"reduce_shfl", "twin", "reduce", [&] { reduce_shfl<<<(unsigned)(N_RED / BS), BS>>>(rin, rout_b); },
       4.0 * N_RED + 4.0 * N_RED / BS},
      {"small_update_x4", "planted", "small_launches", [&] { small_x4(ys); }, 8.0 * N_SMALL},
      {"small_fused", "twin", "small_launches", [&] { small_fused<<<N_SMALL / BS, BS>>>(yf); }, 8.0 * N_SMALL},
  };

  if (mode == "--once") {
    // the twin of the small launches first: not part of the four updates' run (header)
    for (int pass = 0; pass < 2; ++pass)
      for (auto& k : ks)
        if ((std::string(k.name) == "small_fused") == (pass == 0) && selected(only, k.name)) { k.fn(); CKLAUNCH(); }
    CK(cudaDeviceSynchronize());
    return 0;
  }
  if (mode == "--bench") {
    for (auto& k : ks) {
      char extra[256];
      snprintf(extra, sizeof extra, "\"role\": \"%s\", \"pair\": \"%s\", \"bytes_min\": %.0f", k.role, k.pair,
               k.bytes_min);
      bench_json_runs(k.name, k.fn, 25, extra);
    }
    return 0;
  }
  if (mode == "--check") {
    auto line = [](const char* pair, const char* p, const char* t, size_t checked, size_t bad, double extra) {
      printf("{\"pair\": \"%s\", \"planted\": \"%s\", \"twin\": \"%s\", \"checked\": %zu, \"mismatches\": %zu, "
             "\"max_rel_diff\": %.3g, \"ok\": %s}\n", pair, p, t, checked, bad, extra, bad ? "false" : "true");
    };
    auto run = [&](const char* name) {
      for (auto& k : ks)
        if (!strcmp(k.name, name)) k.fn();
      CKLAUNCH();
      CK(cudaDeviceSynchronize());
    };
    {  // AoS vs SoA; the 16-byte struct scalar vs vector
      CK(cudaMemset(out_a, 0xFF, N_AOS * 4)); CK(cudaMemset(out_b, 0xFF, N_AOS * 4));
      run("aos_field_x"); run("soa_field_x");
      auto a = to_host(out_a, N_AOS), b = to_host(out_b, N_AOS);
      size_t bad = 0;
      for (size_t i = 0; i < N_AOS; ++i) bad += memcmp(&a[i], &b[i], 4) != 0;
      line("aos", "aos_field_x", "soa_field_x", N_AOS, bad, 0);
      CK(cudaMemset(out_a, 0xFF, N_AOS * 4)); CK(cudaMemset(out_b, 0xFF, N_AOS * 4));
      run("aos16_scalar"); run("aos16_vec4");
      a = to_host(out_a, N_AOS16); b = to_host(out_b, N_AOS16);
      bad = 0;
      for (size_t i = 0; i < N_AOS16; ++i) bad += memcmp(&a[i], &b[i], 4) != 0;
      line("aos16", "aos16_scalar", "aos16_vec4", N_AOS16, bad, 0);
    }
    {  // predicated stores: out_s[8 i] == out_c[i] for every i (stored or still poisoned), the rest untouched
      CK(cudaMemset(pout_s, 0xFF, N_PRED * PRED_STRIDE * 4)); CK(cudaMemset(pout_c, 0xFF, N_PRED * 4));
      run("pred_store_strided"); run("pred_store_contig");
      auto s = to_host(pout_s, N_PRED * PRED_STRIDE), c = to_host(pout_c, N_PRED);
      size_t bad = 0, stored = 0;
      uint32_t poison = 0xFFFFFFFFu;
      for (size_t i = 0; i < N_PRED; ++i) {
        bad += memcmp(&s[i * PRED_STRIDE], &c[i], 4) != 0;
        stored += memcmp(&c[i], &poison, 4) != 0;
        for (int k = 1; k < PRED_STRIDE; ++k) bad += memcmp(&s[i * PRED_STRIDE + k], &poison, 4) != 0;
      }
      line("pred_store", "pred_store_strided", "pred_store_contig", N_PRED, bad, (double)stored / N_PRED);
    }
    {  // gathers: out_random[i] == out_sorted[perm(i)]
      CK(cudaMemset(out_a, 0xFF, N_GATHER * 4)); CK(cudaMemset(out_b, 0xFF, N_GATHER * 4));
      run("gather_random"); run("gather_sorted");
      auto a = to_host(out_a, N_GATHER), b = to_host(out_b, N_GATHER);
      size_t bad = 0;
      for (size_t i = 0; i < N_GATHER; ++i) bad += memcmp(&a[i], &b[lcg((uint32_t)i, N_GATHER - 1)], 4) != 0;
      line("gather", "gather_random", "gather_sorted", N_GATHER, bad, 0);
    }
    {  // chases: identical walks, plus a host walk for the first 64 threads
      run("chase_serial"); run("chase_interleaved");
      auto a = to_host(cout_a, n_chase_threads), b = to_host(cout_b, n_chase_threads);
      size_t bad = 0;
      for (size_t i = 0; i < n_chase_threads; ++i) bad += a[i] != b[i];
      for (uint32_t t = 0; t < 64; ++t) {
        uint32_t acc = 0;
        for (int w = 0; w < CHASE_WALKS; ++w) {
          uint32_t p = hash32(t * CHASE_WALKS + w) & (uint32_t)(N_CHASE - 1);
          for (int k = 0; k < CHASE_STEPS; ++k) p = lcg(p, (uint32_t)(N_CHASE - 1));
          acc ^= p * (w + 1);
        }
        bad += acc != a[t];
      }
      line("chase", "chase_serial", "chase_interleaved", n_chase_threads, bad, 0);
    }
    {  // reductions: different summation orders, so a relative tolerance
      run("reduce_mod"); run("reduce_shfl");
      auto a = to_host(rout_a, N_RED / BS), b = to_host(rout_b, N_RED / BS);
      auto x = to_host(rin, BS * 64);
      size_t bad = 0;
      double worst = 0;
      for (size_t i = 0; i < N_RED / BS; ++i) {
        double d = fabs((double)a[i] - b[i]) / std::max(1.0, fabs((double)b[i]));
        worst = std::max(worst, d);
        bad += !(d < 1e-5);
      }
      for (int blk = 0; blk < 64; ++blk) {
        double r = 0;
        for (int j = 0; j < BS; ++j) r += x[blk * BS + j];
        bad += !(fabs(r - a[blk]) < 1e-3 * std::max(1.0, fabs(r)));
      }
      line("reduce", "reduce_mod", "reduce_shfl", N_RED / BS, bad, worst);
    }
    {  // small launches: both start from the same values
      CK(cudaMemcpy(yf, ys, N_SMALL * 4, cudaMemcpyDeviceToDevice));
      auto y0 = to_host(ys, N_SMALL);
      run("small_update_x4"); run("small_fused");
      auto a = to_host(ys, N_SMALL), b = to_host(yf, N_SMALL);
      size_t bad = 0;
      for (int i = 0; i < N_SMALL; ++i) {
        float v = y0[i];
        for (int s = 0; s < SMALL_LAUNCHES; ++s) v = fmaf(v, H_SMALL_A[s], H_SMALL_B[s]);
        bad += (a[i] != b[i]) + (a[i] != v);
      }
      line("small_launches", "small_update_x4", "small_fused", N_SMALL, bad, 0);
    }
    return 0;
  }
  fprintf(stderr, "usage: patterns (--once [--only a,b] | --bench | --check)\n");
  return 2;
}
