// model_step.cu — a whole-model workload in plain CUDA: the forward pass of a small pre-LayerNorm transformer
// (embedding gather, LayerNorm, QKV/out/FFN matrix products with bias and GELU epilogues, head permutes, batched
// attention products, softmax, residual adds, final LayerNorm, logits and a cross-entropy reduction), repeated for
// --steps steps. About 13 launches per layer and 5 per step beside the layers: 8 layers × 10 steps = 1090 launches
// of ~20 distinct (kernel, grid, block) shapes, every launch deterministic in order and shape, so that ncu's
// application replay can match kernels across passes. It exists for the big-report benchmark: a report
// with more than 1,000 results holding the sections the rules need.
//
// Deliberately not tuned (a model a user would profile): a 32×32 shared-memory tiled FP32 GEMM without register
// tiling or tensor cores, a head permute that writes with a stride, a softmax with a shared-memory tree reduction,
// and a loss that sums with a global atomicAdd per row.
//
// Build: nvcc -arch=sm_90 -lineinfo -O3 -o bin/model_step model_step.cu
// Run:   ./model_step [--steps N] [--layers L] [--tokens T] [--d D]
#include "common.cuh"
#include <cmath>
#include <string>

namespace {
constexpr int TILE = 32;

__global__ void embed_gather(const int* __restrict__ ids, const float* __restrict__ table, float* __restrict__ x,
                             int tokens, int d) {
  int t = blockIdx.x, c = threadIdx.x;
  for (int j = c; j < d; j += blockDim.x) x[(size_t)t * d + j] = table[(size_t)ids[t] * d + j];
}

// One warp per row, two passes over the row held in registers (d <= 1024).
__global__ void layernorm_fwd(const float* __restrict__ x, const float* __restrict__ g, const float* __restrict__ b,
                              float* __restrict__ y, int rows, int d) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (warp >= rows) return;
  const float* xr = x + (size_t)warp * d;
  float s = 0.f, ss = 0.f;
  for (int j = lane; j < d; j += 32) { float v = xr[j]; s += v; ss += v * v; }
  for (int o = 16; o > 0; o >>= 1) { s += __shfl_xor_sync(0xffffffffu, s, o); ss += __shfl_xor_sync(0xffffffffu, ss, o); }
  float mean = s / d, inv = rsqrtf(ss / d - mean * mean + 1e-5f);
  for (int j = lane; j < d; j += 32) y[(size_t)warp * d + j] = (xr[j] - mean) * inv * g[j] + b[j];
}

// C[M,N] = A[M,K] · B[K,N] (+ bias[N]) (GELU if EPI == 1); batched over blockIdx.z with the given strides.
template <int EPI>
__global__ void gemm_tiled(const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias,
                           float* __restrict__ C, int M, int N, int K, long long sA, long long sB, long long sC,
                           float alpha) {
  __shared__ float As[TILE][TILE], Bs[TILE][TILE + 1];
  A += blockIdx.z * sA; B += blockIdx.z * sB; C += blockIdx.z * sC;
  int tx = threadIdx.x, ty = threadIdx.y;  // block 32 × 8: each thread computes 4 rows
  int row0 = blockIdx.y * TILE, col = blockIdx.x * TILE + tx;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int t = 0; t < K; t += TILE) {
    for (int r = ty; r < TILE; r += 8) {
      int ar = row0 + r, ac = t + tx;
      As[r][tx] = (ar < M && ac < K) ? A[(size_t)ar * K + ac] : 0.f;
      int br = t + r;
      Bs[r][tx] = (br < K && col < N) ? B[(size_t)br * N + col] : 0.f;
    }
    __syncthreads();
    for (int k = 0; k < TILE; ++k) {
      float bv = Bs[k][tx];
      for (int i = 0; i < 4; ++i) acc[i] += As[ty + 8 * i][k] * bv;
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    int r = row0 + ty + 8 * i;
    if (r < M && col < N) {
      float v = alpha * acc[i] + (bias ? bias[col] : 0.f);
      if (EPI == 1) v = 0.5f * v * (1.f + erff(v * 0.70710678f));
      C[(size_t)r * N + col] = v;
    }
  }
}

// [tokens, 3, heads, hd] -> q,k: [heads, tokens, hd] and kT: [heads, hd, tokens] (the transposed write is strided).
__global__ void split_heads(const float* __restrict__ qkv, float* __restrict__ q, float* __restrict__ kT,
                            float* __restrict__ v, int tokens, int heads, int hd) {
  int t = blockIdx.x, h = blockIdx.y, j = threadIdx.x;
  if (j >= hd) return;
  size_t base = ((size_t)t * 3 * heads) * hd;
  q[((size_t)h * tokens + t) * hd + j] = qkv[base + (size_t)(0 * heads + h) * hd + j];
  kT[((size_t)h * hd + j) * tokens + t] = qkv[base + (size_t)(1 * heads + h) * hd + j];
  v[((size_t)h * tokens + t) * hd + j] = qkv[base + (size_t)(2 * heads + h) * hd + j];
}

__global__ void merge_heads(const float* __restrict__ o, float* __restrict__ y, int tokens, int heads, int hd) {
  int t = blockIdx.x, h = blockIdx.y, j = threadIdx.x;
  if (j < hd) y[(size_t)t * heads * hd + h * hd + j] = o[((size_t)h * tokens + t) * hd + j];
}

// Row softmax with a causal mask; block of 256 threads per row; shared-memory tree reductions.
__global__ void softmax_causal(float* __restrict__ s, int rows_per_head, int cols) {
  __shared__ float red[256];
  int row = blockIdx.x, tid = threadIdx.x;
  int limit = row % rows_per_head + 1;  // causal: keys 0..row
  float* sr = s + (size_t)row * cols;
  float m = -INFINITY;
  for (int j = tid; j < limit; j += blockDim.x) m = fmaxf(m, sr[j]);
  red[tid] = m; __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o >>= 1) { if (tid < o) red[tid] = fmaxf(red[tid], red[tid + o]); __syncthreads(); }
  m = red[0]; __syncthreads();
  float sum = 0.f;
  for (int j = tid; j < limit; j += blockDim.x) sum += __expf(sr[j] - m);
  red[tid] = sum; __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o >>= 1) { if (tid < o) red[tid] += red[tid + o]; __syncthreads(); }
  float inv = 1.f / red[0];
  for (int j = tid; j < cols; j += blockDim.x) sr[j] = j < limit ? __expf(sr[j] - m) * inv : 0.f;
}

__global__ void residual_add(float* __restrict__ x, const float* __restrict__ y, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) x[i] += y[i];
}

// Cross-entropy over the vocabulary, one block per token, atomicAdd of each row's loss into one float.
__global__ void cross_entropy(const float* __restrict__ logits, const int* __restrict__ target, float* __restrict__ loss,
                              int vocab) {
  __shared__ float red[256];
  int t = blockIdx.x, tid = threadIdx.x;
  const float* lr = logits + (size_t)t * vocab;
  float m = -INFINITY;
  for (int j = tid; j < vocab; j += blockDim.x) m = fmaxf(m, lr[j]);
  red[tid] = m; __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o >>= 1) { if (tid < o) red[tid] = fmaxf(red[tid], red[tid + o]); __syncthreads(); }
  m = red[0]; __syncthreads();
  float s = 0.f;
  for (int j = tid; j < vocab; j += blockDim.x) s += __expf(lr[j] - m);
  red[tid] = s; __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o >>= 1) { if (tid < o) red[tid] += red[tid + o]; __syncthreads(); }
  if (tid == 0) atomicAdd(loss, logf(red[0]) + m - lr[target[t]]);
}

struct Layer { float *ln1g, *ln1b, *wqkv, *bqkv, *wo, *bo, *ln2g, *ln2b, *w1, *b1, *w2, *b2; };

template <int EPI>
void gemm(const float* A, const float* B, const float* bias, float* C, int M, int N, int K, int batch = 1,
          long long sA = 0, long long sB = 0, long long sC = 0, float alpha = 1.f) {
  dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE, batch), block(TILE, 8);
  gemm_tiled<EPI><<<grid, block>>>(A, B, bias, C, M, N, K, sA, sB, sC, alpha);
  CKLAUNCH();
}
}  // namespace

int main(int argc, char** argv) {
  int steps = 10, layers = 8, T = 256, D = 256, H = 4, V = 2048;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](int& dst) { if (i + 1 < argc) dst = atoi(argv[++i]); };
    if (a == "--steps") next(steps);
    else if (a == "--layers") next(layers);
    else if (a == "--tokens") next(T);
    else if (a == "--d") next(D);
    else { fprintf(stderr, "usage: model_step [--steps N] [--layers L] [--tokens T] [--d D]\n"); return 2; }
  }
  const int hd = D / H, F = 4 * D;
  CK(cudaSetDevice(0));
  uint32_t seed = 1;
  auto w = [&](size_t n, float scale) { return device_random_floats(n, seed++, -scale, 2 * scale); };
  std::vector<Layer> L(layers);
  for (auto& l : L) {
    l.ln1g = w(D, 0.1f); l.ln1b = w(D, 0.1f); l.wqkv = w((size_t)D * 3 * D, 0.05f); l.bqkv = w(3 * D, 0.01f);
    l.wo = w((size_t)D * D, 0.05f); l.bo = w(D, 0.01f); l.ln2g = w(D, 0.1f); l.ln2b = w(D, 0.1f);
    l.w1 = w((size_t)D * F, 0.05f); l.b1 = w(F, 0.01f); l.w2 = w((size_t)F * D, 0.05f); l.b2 = w(D, 0.01f);
  }
  float* emb = w((size_t)V * D, 0.5f);
  float* lnfg = w(D, 0.1f); float* lnfb = w(D, 0.1f);
  float* wout = w((size_t)D * V, 0.05f);
  std::vector<int> hid(T), htg(T);
  for (int t = 0; t < T; ++t) { hid[t] = hash32(t * 7u + 1) % V; htg[t] = hash32(t * 13u + 5) % V; }
  int *ids, *tgt;
  CK(cudaMalloc(&ids, T * sizeof(int))); CK(cudaMalloc(&tgt, T * sizeof(int)));
  CK(cudaMemcpy(ids, hid.data(), T * sizeof(int), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(tgt, htg.data(), T * sizeof(int), cudaMemcpyHostToDevice));
  float* x = device_alloc<float>((size_t)T * D);
  float* h = device_alloc<float>((size_t)T * D);
  float* qkv = device_alloc<float>((size_t)T * 3 * D);
  float* q = device_alloc<float>((size_t)T * D);
  float* kT = device_alloc<float>((size_t)T * D);
  float* v = device_alloc<float>((size_t)T * D);
  float* s = device_alloc<float>((size_t)H * T * T);
  float* o = device_alloc<float>((size_t)T * D);
  float* a = device_alloc<float>((size_t)T * D);
  float* f1 = device_alloc<float>((size_t)T * F);
  float* logits = device_alloc<float>((size_t)T * V);
  float* loss = device_alloc<float>(1);
  const size_t n = (size_t)T * D;
  const unsigned eb = (unsigned)((n + 255) / 256);
  const float scale = 1.f / sqrtf((float)hd);
  CK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  CK(cudaEventRecord(e0));
  int launches = 0;
  for (int st = 0; st < steps; ++st) {
    embed_gather<<<T, 256>>>(ids, emb, x, T, D); CKLAUNCH(); ++launches;
    for (auto& l : L) {
      layernorm_fwd<<<(T * 32 + 255) / 256, 256>>>(x, l.ln1g, l.ln1b, h, T, D); CKLAUNCH();
      gemm<0>(h, l.wqkv, l.bqkv, qkv, T, 3 * D, D);
      split_heads<<<dim3(T, H), hd>>>(qkv, q, kT, v, T, H, hd); CKLAUNCH();
      gemm<0>(q, kT, nullptr, s, T, T, hd, H, (long long)T * hd, (long long)hd * T, (long long)T * T, scale);
      softmax_causal<<<H * T, 256>>>(s, T, T); CKLAUNCH();
      gemm<0>(s, v, nullptr, o, T, hd, T, H, (long long)T * T, (long long)T * hd, (long long)T * hd);
      merge_heads<<<dim3(T, H), hd>>>(o, a, T, H, hd); CKLAUNCH();
      gemm<0>(a, l.wo, l.bo, h, T, D, D);
      residual_add<<<eb, 256>>>(x, h, n); CKLAUNCH();
      layernorm_fwd<<<(T * 32 + 255) / 256, 256>>>(x, l.ln2g, l.ln2b, h, T, D); CKLAUNCH();
      gemm<1>(h, l.w1, l.b1, f1, T, F, D);
      gemm<0>(f1, l.w2, l.b2, h, T, D, F);
      residual_add<<<eb, 256>>>(x, h, n); CKLAUNCH();
      launches += 13;
    }
    layernorm_fwd<<<(T * 32 + 255) / 256, 256>>>(x, lnfg, lnfb, h, T, D); CKLAUNCH();
    gemm<0>(h, wout, nullptr, logits, T, V, D);
    CK(cudaMemsetAsync(loss, 0, sizeof(float)));
    cross_entropy<<<T, 256>>>(logits, tgt, loss, V); CKLAUNCH();
    launches += 3;
  }
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float ms = 0.f, hl = 0.f;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  CK(cudaMemcpy(&hl, loss, sizeof(float), cudaMemcpyDeviceToHost));
  printf("model_step: %d steps x %d layers, %d launches, %.3f ms (%.1f us per launch), loss %.4f\n", steps, layers,
         launches, ms, 1000.f * ms / launches, hl / T);
  return 0;
}
