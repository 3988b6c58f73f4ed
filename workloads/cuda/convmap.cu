// convmap.cu — a direct 2-D convolution whose thread mapping strides every global access, and its two twins: an
// 11×11 single-channel fp32 filter (its 121 weights in global memory, read by every thread at the same address,
// `weight[kr * k + kc]`) over an 8192×8192 image, the input padded by 5 on every side (a "valid" convolution over the
// padded image: no bounds test inside the loop). The filter size and the image size are kernel arguments, as a
// naive kernel has them: the loops run over `k`, so the weight's address is formed from the parameter and the two loop
// counters alone (a grid-uniform load: the same address in every thread of the grid, a filter not a matrix product).
// Written for this project (2026-12-06) to reproduce, with our own code, the mechanism of a foreign report whose
// repository has no licence (Swagatam1812/hpca-gpu-memory-profiling's naive and shared-tile conv2d on an A100), so
// that the rule cases built on it can come from a report we may commit.
//
// PLANTED: uncoalesced — convmap_strided: one output per thread in 32×8 blocks, the output row from threadIdx.x
//   (`row = blockIdx.x * blockDim.x + threadIdx.x`) and the column from threadIdx.y. The 32 lanes of a warp read 32
//   consecutive rows of one column: every pixel load of a warp touches 32 sectors in 32 lines where 4 would do
//   (87.5% of its sectors wasted), and so does the output store (one float in each of 32 sectors). The weight load is
//   one address for the whole warp (a broadcast: one sector, nothing wasted).
// FIXED TWINS:
//   convmap_coalesced — the same arithmetic with the column from threadIdx.x (`col = blockIdx.x * blockDim.x +
//                       threadIdx.x`): a warp reads 32 consecutive floats of one row (4 sectors, 5 when the window
//                       starts off a sector boundary). MEM001's twin. Still 121 pixel loads per output through L1:
//                       every input is loaded 121 times (11 neighbours in its row × 11 rows).
//   convmap_tiled     — convmap_coalesced plus the block's input tile with its halo in shared memory, loaded once in
//                       coalesced rows ((8 + 10) × (32 + 10) floats for a 32×8 block), then the 121 taps read from
//                       shared memory (LDS + the weight's LDG + FFMA per tap, one output per thread). TIL001's twin of
//                       convmap_coalesced. The weights stay in global memory, read per tap.
//   convmap_window    — (added 2026-12-06 ~14:15 UTC, after the first capture, not yet run) the fix TIL001's card
//                       describes: the block's input tile with its halo and the 121 weights in shared memory, and a
//                       register window of 8 outputs down a column per thread (32×8 threads cover 32 columns × 64
//                       rows); for each filter column a thread reads 18 tile values into registers and its 11 weights,
//                       then does 88 FFMAs: 29 LDS per 88 FFMA, where convmap_tiled runs an LDS and an LDG per FFMA.
//                       The filter size is a compile-time constant here (the window is an array of registers). It
//                       sums the taps column by column, not row by row: its output differs from the others' by float
//                       rounding (the check's tolerance, 1e-4, not identity).
//
// EXPECTED (written from the code on 2026-12-06, before any run; H100 SXM, 132 SMs, ~1.98 GHz with clocks not locked;
// counts per warp and per tap, "wavefront" = one L1 data-stage cycle):
//   convmap_strided   — first finding MEM001 (uncoalesced global loads, ~8× the ideal sectors: 32 sectors a pixel
//                       request against 4; the store the same), estimate about −85% to −92% (its fixed kernel is
//                       convmap_coalesced). L1 is the wall: ~32 wavefronts per pixel request + 1 for the weight,
//                       121 taps per output: ~4,000 L1 cycles per warp-output, 2.1 M warp-outputs over 132 SMs →
//                       ~25–35 ms. DRAM nearly idle (the lines are re-read from L1/L2, not DRAM). TIL001 may follow,
//                       counted after MEM001 (its estimate then about as on convmap_coalesced). MEM004 (partial-sector
//                       stores: 4 bytes of each 32-byte sector) possible but minor: the stores are 1/121 of the
//                       requests. Not a matrix product: the weight is grid-uniform (no TEN001, no product's
//                       two-level tile).
//   convmap_coalesced — first finding TIL001 (little data reuse: each input loaded ~121× through L1; the fix: the
//                       block's tile with its halo in shared memory), estimate about −35% to −60%: TIL001's fixed
//                       kernel is the tile plus a register window of several outputs per thread, so it should say at
//                       least what convmap_tiled measures against this kernel (which lacks the window). Time: ~2
//                       wavefronts per pixel request (the 32 floats across 2 lines) + 1 for the weight, ~3 L1 cycles
//                       per tap → ~2.5–4 ms (MEM001's −85% to −92% on convmap_strided). No MEM001 (nothing wasted
//                       beyond the window's misalignment, ~20% at most).
//   convmap_tiled     — L1/shared memory the busiest unit (~1 shared wavefront + 1 weight wavefront per tap: ~2 L1
//                       cycles per tap → ~1.7–2.5 ms, −25% to −45% against convmap_coalesced), the FMA pipe well under
//                       its ceiling (one FFMA per ~2 L1 cycles: ~10–30% of the FMA pipe on an H100, which has twice
//                       an A100's FP32 lanes per L1 cycle): TEN001 must not fire (not an FMA-bound matrix product), nor
//                       MEM002 (the taps read consecutive words across a warp: conflict-free), nor MEM001. First
//                       finding TIL001 on its shared path (the taps re-read each staged value 121 times: a register
//                       window of several outputs per thread), estimate about −30% to −60% (lower if the model keeps
//                       the weight's 121 global loads per output, which the window does not remove by itself).
//
//   convmap_window    — (written 2026-12-06 ~14:15 UTC, before any run) FP32 FMA-bound or close: 16.2 GFLOP at
//                       ~67 TFLOP/s is 243 µs; with the shared reads (~0.33 per FFMA, 1 wavefront each) and the tile's
//                       load, ~0.35–0.7 ms, the FMA pipe 35–70% busy. TIL001's estimates for its fix, read on the first
//                       capture: from convmap_coalesced −59% (0.97 ms), from convmap_tiled −19% (1.81 ms); this kernel
//                       measures which is nearer. Its own first finding: none with room, or TEN001 (a filter on FMAs:
//                       tensor cores) if the FMA pipe passes 40%.
//
// SASS (nvcc 13.0 -arch=sm_90 -O3, read with cuobjdump on 2026-12-06, no GPU): the inner loop over kc is unrolled by
//   16 with remainders of 8, 4 and 1; 31 weight loads and 31 pixel loads
//   (LDG.E.CONSTANT) in convmap_strided and convmap_coalesced, 31 weight loads, 31 LDS and 1 tile load in
//   convmap_tiled; `rulekit.models.grid_uniform_loads` calls the 31 weight loads grid-uniform and the pixel and tile
//   loads varying, in all three.
//
// Modes: ./convmap --once [--only a,b]    launch each kernel once (for ncu)
//        ./convmap --bench [--only a,b]   3 warm-ups, median of 15 cudaEvent timings, JSON lines
//        ./convmap --check                each kernel against a host reference at sampled outputs, and each twin's
//                                          whole output against convmap_strided's, JSON lines
// Build: nvcc -arch=sm_90 -lineinfo -O3 -o bin/convmap convmap.cu
#include "common.cuh"
#include <cmath>
#include <cstring>
#include <string>

namespace {
constexpr int W = 8192, H = 8192;  // output image
constexpr int KS = 11;             // filter side (passed to the kernels at run time)
constexpr int BX = 32, BY = 8;     // threads per block

// out(row, col) = sum over kr, kc in [0, k) of weight[kr * k + kc] * in[(row + kr) * pitch + col + kc]; `in` is the
// padded image, pitch = width + k - 1 floats a row.

// PLANTED: lane i of a warp computes row i of a column: every load and store strides by a row.
__global__ void convmap_strided(const float* __restrict__ in, const float* __restrict__ weight,
                                float* __restrict__ out, int width, int height, int k) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= height || col >= width) return;
  int pitch = width + k - 1;
  float acc = 0.f;
  for (int kr = 0; kr < k; ++kr)
    for (int kc = 0; kc < k; ++kc) acc += in[(size_t)(row + kr) * pitch + col + kc] * weight[kr * k + kc];
  out[(size_t)row * width + col] = acc;
}

// FIXED TWIN (coalesced): lane i of a warp computes column i of a row.
__global__ void convmap_coalesced(const float* __restrict__ in, const float* __restrict__ weight,
                                  float* __restrict__ out, int width, int height, int k) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= height || col >= width) return;
  int pitch = width + k - 1;
  float acc = 0.f;
  for (int kr = 0; kr < k; ++kr)
    for (int kc = 0; kc < k; ++kc) acc += in[(size_t)(row + kr) * pitch + col + kc] * weight[kr * k + kc];
  out[(size_t)row * width + col] = acc;
}

// FIXED TWIN (coalesced + the block's input tile with its halo in shared memory, one output per thread). The grid
// covers the image exactly (the host checks width % blockDim.x and height % blockDim.y), so every thread reaches the
// barrier and every tile element lies inside the padded image.
__global__ void convmap_tiled(const float* __restrict__ in, const float* __restrict__ weight,
                              float* __restrict__ out, int width, int height, int k) {
  extern __shared__ float tile[];  // (blockDim.y + k - 1) rows of (blockDim.x + k - 1) floats
  int tw = blockDim.x + k - 1, th = blockDim.y + k - 1, pitch = width + k - 1;
  int col0 = blockIdx.x * blockDim.x, row0 = blockIdx.y * blockDim.y;
  for (int i = threadIdx.y * blockDim.x + threadIdx.x; i < tw * th; i += blockDim.x * blockDim.y)
    tile[i] = in[(size_t)(row0 + i / tw) * pitch + col0 + i % tw];  // coalesced rows, each input loaded once
  __syncthreads();
  float acc = 0.f;
  for (int kr = 0; kr < k; ++kr)
    for (int kc = 0; kc < k; ++kc) acc += tile[(threadIdx.y + kr) * tw + threadIdx.x + kc] * weight[kr * k + kc];
  int col = col0 + threadIdx.x, row = row0 + threadIdx.y;
  if (row < height && col < width) out[(size_t)row * width + col] = acc;
}

// FIXED TWIN (the card's fix: the tile with its halo and the weights in shared memory, 8 outputs a thread from a
// register window down a column). The grid covers the image exactly, as convmap_tiled's; k must equal KS.
constexpr int OPT = 8;  // outputs per thread, down a column
__global__ void convmap_window(const float* __restrict__ in, const float* __restrict__ weight,
                               float* __restrict__ out, int width, int height, int k) {
  extern __shared__ float smem[];  // the weights, then (OPT * blockDim.y + KS - 1) rows of (blockDim.x + KS - 1)
  float* sw = smem;
  float* tile = smem + KS * KS;
  int tw = blockDim.x + KS - 1, th = OPT * blockDim.y + KS - 1, pitch = width + KS - 1;
  int col0 = blockIdx.x * blockDim.x, row0 = blockIdx.y * blockDim.y * OPT;
  int tid = threadIdx.y * blockDim.x + threadIdx.x, nthreads = blockDim.x * blockDim.y;
  for (int i = tid; i < KS * KS; i += nthreads) sw[i] = weight[i];
  for (int i = tid; i < tw * th; i += nthreads)
    tile[i] = in[(size_t)(row0 + i / tw) * pitch + col0 + i % tw];  // coalesced rows, each input loaded once
  __syncthreads();
  float acc[OPT] = {};
  const float* base = tile + threadIdx.y * OPT * tw + threadIdx.x;
#pragma unroll 1
  for (int kc = 0; kc < KS; ++kc) {
    float win[OPT + KS - 1], w[KS];  // one column of the tile, and the filter's column, in registers
#pragma unroll
    for (int i = 0; i < OPT + KS - 1; ++i) win[i] = base[i * tw + kc];
#pragma unroll
    for (int kr = 0; kr < KS; ++kr) w[kr] = sw[kr * KS + kc];
#pragma unroll
    for (int kr = 0; kr < KS; ++kr)
#pragma unroll
      for (int o = 0; o < OPT; ++o) acc[o] += win[o + kr] * w[kr];
  }
  int col = col0 + threadIdx.x, row = row0 + threadIdx.y * OPT;
#pragma unroll
  for (int o = 0; o < OPT; ++o)
    if (row + o < height && col < width) out[(size_t)(row + o) * width + col] = acc[o];
}

using KernelFn = void (*)(const float*, const float*, float*, int, int, int);
struct K { const char* name; KernelFn fn; dim3 grid, block; size_t smem; };
const K KERNELS[] = {
    {"convmap_strided", convmap_strided, dim3(H / BX, W / BY), dim3(BX, BY), 0},
    {"convmap_coalesced", convmap_coalesced, dim3(W / BX, H / BY), dim3(BX, BY), 0},
    {"convmap_tiled", convmap_tiled, dim3(W / BX, H / BY), dim3(BX, BY),
     sizeof(float) * (BX + KS - 1) * (BY + KS - 1)},
    {"convmap_window", convmap_window, dim3(W / BX, H / (BY * OPT)), dim3(BX, BY),
     sizeof(float) * (KS * KS + (BX + KS - 1) * (OPT * BY + KS - 1))},
};
constexpr int NKERNELS = sizeof(KERNELS) / sizeof(KERNELS[0]);
static_assert(W % BX == 0 && H % BY == 0 && H % BX == 0 && W % BY == 0, "the grids cover the image exactly");
static_assert(H % (BY * OPT) == 0, "the window's grid covers the image exactly");

constexpr int P = W + KS - 1, PH = H + KS - 1;  // the padded input's pitch and height

// The padded input on the host: a random W×H image, its border copied outward (clamp-to-edge), R = KS / 2 each side.
std::vector<float> padded_input(uint32_t seed) {
  constexpr int R = KS / 2;
  std::vector<float> h((size_t)P * PH);
  parallel_for((size_t)PH, [&](size_t b, size_t e) {
    for (size_t py = b; py < e; ++py) {
      int y = std::min(std::max((int)py - R, 0), H - 1);
      for (int px = 0; px < P; ++px) {
        int x = std::min(std::max(px - R, 0), W - 1);
        h[py * P + px] = hash_float((uint32_t)((size_t)y * W + x), seed, 0.5f, 1.0f);
      }
    }
  });
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? std::string(argv[1]) : "--once";
  std::string only = only_arg(argc, argv);
  CK(cudaSetDevice(0));
  std::vector<float> hw(KS * KS);  // a filter that sums to 1, not separable
  for (int i = 0; i < KS * KS; ++i) hw[i] = hash_float(i, 111u, 0.5f, 1.0f) / (KS * KS);
  std::vector<float> hin = padded_input(17u);
  float *in = nullptr, *weight = nullptr;
  CK(cudaMalloc(&in, hin.size() * sizeof(float)));
  CK(cudaMemcpy(in, hin.data(), hin.size() * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMalloc(&weight, hw.size() * sizeof(float)));
  CK(cudaMemcpy(weight, hw.data(), hw.size() * sizeof(float), cudaMemcpyHostToDevice));
  float* out = device_alloc<float>((size_t)W * H);
  float* out2 = device_alloc<float>((size_t)W * H);
  CK(cudaDeviceSynchronize());
  auto launch = [&](const K& kn, float* o) { kn.fn<<<kn.grid, kn.block, kn.smem>>>(in, weight, o, W, H, KS); };
  if (mode == "--once") {
    for (auto& kn : KERNELS)
      if (selected(only, kn.name)) { launch(kn, out); CKLAUNCH(); }
    CK(cudaDeviceSynchronize());
    return 0;
  }
  if (mode == "--bench") {
    for (auto& kn : KERNELS)
      if (selected(only, kn.name)) bench_json(kn.name, [&] { launch(kn, out); });
    return 0;
  }
  if (mode == "--check") {
    // each kernel against a double-precision host reference at 4096 sampled outputs (corners included)
    std::vector<float> got((size_t)W * H);
    for (auto& kn : KERNELS) {
      launch(kn, out);
      CKLAUNCH();
      CK(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
      double md = 0;
      for (uint32_t s = 0; s < 4096; ++s) {
        int row = s < 4 ? (s & 1) * (H - 1) : (int)(hash32(s * 2u + 1u) % H);
        int col = s < 4 ? (s >> 1) * (W - 1) : (int)(hash32(s * 2u + 2u) % W);
        double ref = 0;
        for (int kr = 0; kr < KS; ++kr)
          for (int kc = 0; kc < KS; ++kc) ref += (double)hw[kr * KS + kc] * hin[(size_t)(row + kr) * P + col + kc];
        md = std::max(md, std::fabs(ref - (double)got[(size_t)row * W + col]));
      }
      printf("{\"kernel\": \"%s\", \"reference\": \"host, 4096 sampled outputs\", \"max_abs_diff\": %.3g, "
             "\"ok\": %s}\n", kn.name, md, md < 1e-4 ? "true" : "false");
    }
    // each twin's whole output against the planted kernel's
    for (int t = 1; t < NKERNELS; ++t) {
      launch(KERNELS[0], out);
      launch(KERNELS[t], out2);
      CKLAUNCH();
      CK(cudaDeviceSynchronize());
      double md = max_abs_diff(out, out2, (size_t)W * H);
      printf("{\"planted\": \"%s\", \"twin\": \"%s\", \"max_abs_diff\": %.3g, \"ok\": %s}\n", KERNELS[0].name,
             KERNELS[t].name, md, md < 1e-4 ? "true" : "false");
    }
    return 0;
  }
  fprintf(stderr, "usage: convmap (--once | --bench | --check) [--only a,b]\n");
  return 2;
}
