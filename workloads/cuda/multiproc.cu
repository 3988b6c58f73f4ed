// multiproc.cu — a program that runs its GPU work in worker processes, like torchrun or a data-parallel launcher:
// the parent never touches CUDA; it starts --ranks copies of itself (environment RANK, LOCAL_RANK and WORLD_SIZE
// set as torchrun sets them) and waits for them. Every rank launches the same kernel (scale_add, 4 times) and
// one kernel of its own: rank 0 a strided copy (uncoalesced), rank 1 a float4 copy, further ranks a plain copy.
// Used for the multi-process fixture (ncu --target-processes all) and the multi-process test of `profile`.
//
// Build: nvcc -arch=sm_90 -lineinfo -O3 -o bin/multiproc multiproc.cu
// Run:   ./multiproc [--ranks N]          (N worker processes, default 2, all on device 0 unless DEVICES > 1)
#include "common.cuh"
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {
constexpr size_t N = size_t(1) << 24;

__global__ void scale_add(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) c[i] = 2.f * a[i] + b[i];
}
__global__ void copy_strided_rank(const float* __restrict__ a, float* __restrict__ c, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[(i * 32) % n + (i * 32) / n];  // a stride of 32 floats: one sector per thread
}
__global__ void copy_vec4_rank(const float4* __restrict__ a, float4* __restrict__ c, size_t n4) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n4) c[i] = a[i];
}
__global__ void copy_plain_rank(const float* __restrict__ a, float* __restrict__ c, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i];
}

int worker(int rank) {
  int devices = 1;
  CK(cudaGetDeviceCount(&devices));
  CK(cudaSetDevice(rank % devices));
  float* a = device_random_floats(N, 1u + rank);
  float* b = device_random_floats(N, 7u + rank);
  float* c = device_alloc<float>(N);
  CK(cudaDeviceSynchronize());
  unsigned blocks = (unsigned)((N + 255) / 256);
  for (int i = 0; i < 4; ++i) { scale_add<<<blocks, 256>>>(a, b, c, N); CKLAUNCH(); }
  if (rank == 0) copy_strided_rank<<<blocks, 256>>>(a, c, N);
  else if (rank == 1) copy_vec4_rank<<<(unsigned)((N / 4 + 255) / 256), 256>>>((const float4*)a, (float4*)c, N / 4);
  else copy_plain_rank<<<blocks, 256>>>(a, c, N);
  CKLAUNCH();
  CK(cudaDeviceSynchronize());
  printf("rank %d of pid %d: done\n", rank, (int)getpid());
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  int ranks = 2, rank = -1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--ranks" && i + 1 < argc) ranks = atoi(argv[++i]);
    else if (a == "--rank" && i + 1 < argc) rank = atoi(argv[++i]);
    else { fprintf(stderr, "usage: multiproc [--ranks N]\n"); return 2; }
  }
  if (rank >= 0) return worker(rank);
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    pid_t p = fork();
    if (p < 0) { perror("fork"); return 1; }
    if (p == 0) {
      std::string rs = std::to_string(r), ws = std::to_string(ranks);
      setenv("RANK", rs.c_str(), 1); setenv("LOCAL_RANK", rs.c_str(), 1); setenv("WORLD_SIZE", ws.c_str(), 1);
      execl("/proc/self/exe", argv[0], "--rank", rs.c_str(), (char*)nullptr);
      perror("exec");
      _exit(127);
    }
    pids.push_back(p);
  }
  int rc = 0;
  for (pid_t p : pids) {
    int st = 0;
    waitpid(p, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) rc = 1;
  }
  return rc;
}
