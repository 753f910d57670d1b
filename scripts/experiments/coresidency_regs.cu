// Probe (an experiment, not part of the library), the second half of coresidency.sh: does
// a block that takes 192 KiB of shared memory AND about 170 registers a thread (as the
// wgmma GEMMs' blocks do) start on a multiprocessor that holds a spinning 256-thread
// block of another kernel on another stream? nvcc-compiled, so the register count is
// set (-Xptxas -v prints it); both kernels are given the largest shared-memory carveout.
//
// `heavy<R>` runs one block a multiprocessor per wave (8 waves), each busy BUSY_NS with R
// accumulators live; `spin` runs G blocks launched first on another stream, waiting for
// heavy's last block. Prints heavy's time against the two ideals (blocks share, or each
// spinning block holds its multiprocessor).
//
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90a -Xptxas -v coresidency_regs.cu
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CHECK(x)                                                                       \
    do {                                                                               \
        cudaError_t e = (x);                                                           \
        if (e != cudaSuccess) {                                                        \
            printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e));           \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

__device__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void __launch_bounds__(256) spin(unsigned long long *flags, unsigned long long limit) {
    if (threadIdx.x == 0) {
        unsigned long long start = now_ns();
        int polls = 0;
        while (atomicAdd(flags, 0ull) == 0 && now_ns() - start < limit) {
            if (++polls > 64) __nanosleep(512);
        }
        atomicAdd(flags + 2, 1ull);
    }
    __syncthreads();
}

// R accumulators a thread, live across the busy loop (forces the register count).
template <int R>
__global__ void __launch_bounds__(256, 1)
    heavy(unsigned long long *flags, unsigned long long busy, unsigned long long blocks, float *out) {
    extern __shared__ float s[];
    s[threadIdx.x * 192] = threadIdx.x;
    __syncthreads();
    float acc[R];
#pragma unroll
    for (int i = 0; i < R; i++) acc[i] = s[(threadIdx.x * 7 + i) % 256 * 192];
    unsigned long long start = now_ns();
    while (now_ns() - start < busy) {
#pragma unroll
        for (int i = 0; i < R; i++) acc[i] = fmaf(acc[i], 1.0000001f, acc[(i + 1) % R]);
    }
    float sum = 0;
#pragma unroll
    for (int i = 0; i < R; i++) sum += acc[i];
    if (sum == 12345.0f) out[threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long done = atomicAdd(flags + 1, 1ull);
        if (done + 1 == blocks) atomicExch(flags, 1ull);
    }
}

// `streams` > 1 splits heavy's blocks over that many streams, launched together (four
// ranks' GEMMs on one device), each launch counting towards the same last block.
template <int R>
void probe(int sms, const std::vector<int> &spins, int streams) {
    const size_t smem = 192 * 1024;
    CHECK(cudaFuncSetAttribute(heavy<R>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CHECK(cudaFuncSetAttribute(heavy<R>, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
    CHECK(cudaFuncSetAttribute(spin, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
    cudaFuncAttributes attr;
    CHECK(cudaFuncGetAttributes(&attr, heavy<R>));
    cudaStream_t a[4], b;
    for (int i = 0; i < streams; i++) CHECK(cudaStreamCreateWithFlags(&a[i], cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    unsigned long long *flags;
    float *out;
    CHECK(cudaMalloc(&flags, 32));
    CHECK(cudaMalloc(&out, 4096));
    const unsigned long long busy = 50000, blocks = (unsigned long long)sms * 8;
    for (int g : spins) {
        std::vector<float> times;
        for (int rep = 0; rep < 5; rep++) {
            CHECK(cudaMemset(flags, 0, 32));
            CHECK(cudaDeviceSynchronize());
            cudaEvent_t e0, e1;
            CHECK(cudaEventCreate(&e0));
            CHECK(cudaEventCreate(&e1));
            CHECK(cudaEventRecord(e0, b));
            if (g > 0) spin<<<g, 256, 0, b>>>(flags, 2000000000ull);
            for (int i = 0; i < streams; i++)
                heavy<R><<<blocks / streams, 256, smem, a[i]>>>(flags, busy, blocks, out);
            CHECK(cudaDeviceSynchronize());
            CHECK(cudaEventRecord(e1, b));
            CHECK(cudaEventSynchronize(e1));
            CHECK(cudaGetLastError());
            float ms;
            CHECK(cudaEventElapsedTime(&ms, e0, e1));
            times.push_back(ms);
        }
        std::sort(times.begin(), times.end());
        double ideal = blocks * busy / 1e6 / sms;
        double fewer = blocks * busy / 1e6 / std::max(1, sms - g);
        printf("regs %3d, %d stream(s): spinning blocks %4d: heavy took %.3f ms (median of 5); %.3f if they "
               "share, %.3f if each spinning block holds its SM\n",
               attr.numRegs, streams, g, times[2], ideal, fewer);
    }
}

int main(int argc, char **argv) {
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    printf("%s, %d SMs, %d regs/SM, %zu smem/SM\n", p.name, p.multiProcessorCount, p.regsPerMultiprocessor,
           p.sharedMemPerMultiprocessor);
    std::vector<int> spins = {0, 32, 128};
    probe<8>(p.multiProcessorCount, spins, 1);
    probe<120>(p.multiProcessorCount, spins, 1);
    probe<160>(p.multiProcessorCount, spins, 1);
    probe<200>(p.multiProcessorCount, spins, 1);
    probe<160>(p.multiProcessorCount, spins, 4);
    return 0;
}
