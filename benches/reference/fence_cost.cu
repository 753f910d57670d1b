// What a one-thread kernel with a memory fence costs right after a kernel that wrote a
// lot of memory (none, a GPU-scope fence, a system-scope one), and a one-thread barrier
// among four streams of one device right after each stream wrote 64 MiB: the floor of
// iris's device barrier (src/ccl/signals.rs) in CUDA C++, with the same fence and polls
// (into one row of flags the four streams share, where iris stores into each rank's copy).
// docs/performance.md ("Where the fused reductions' trailing barrier goes") has the numbers.
//
//   nvcc -O2 -arch=sm_90 -o fence_cost fence_cost.cu && ./fence_cost
#include <cstdio>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

__global__ void big_write(float4* p, size_t n, float v) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = make_float4(v, v, v, v);
}
__global__ void one(unsigned long long* flag, int kind, unsigned long long v) {
    if (kind == 1) asm volatile("fence.acq_rel.gpu;" ::: "memory");
    if (kind == 2) asm volatile("fence.acq_rel.sys;" ::: "memory");
    if (kind == 3) asm volatile("fence.sc.sys;" ::: "memory");
    asm volatile("st.relaxed.sys.global.u64 [%0], %1;" :: "l"(flag), "l"(v) : "memory");
}
// A one-thread barrier among `world` streams: fence of `kind`, store epoch into every
// flag, poll every flag (relaxed, system) until each is at least `epoch`.
__global__ void barrier(unsigned long long* flags, int me, int world, int kind, unsigned long long epoch) {
    if (kind == 1) asm volatile("fence.acq_rel.gpu;" ::: "memory");
    if (kind >= 2) asm volatile("fence.acq_rel.sys;" ::: "memory");
    asm volatile("st.relaxed.sys.global.u64 [%0], %1;" :: "l"(flags + me), "l"(epoch) : "memory");
    for (int r = 0; r < world; r++) {
        unsigned long long v;
        int polls = 0;
        for (;;) {
            asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(flags + r) : "memory");
            if (v >= epoch) break;
            if (kind == 3 && ++polls > 1024) __nanosleep(256);
        }
    }
    if (kind == 1) asm volatile("fence.acq_rel.gpu;" ::: "memory");
    if (kind >= 2) asm volatile("fence.acq_rel.sys;" ::: "memory");
}
int streams_barrier() {
    const int W = 4;
    cudaStream_t s[W]; cudaEvent_t a[W], b[W], c[W];
    float4* p[W]; unsigned long long* flags;
    CK(cudaMalloc(&flags, 64)); CK(cudaMemset(flags, 0, 64));
    for (int r = 0; r < W; r++) {
        CK(cudaStreamCreateWithFlags(&s[r], cudaStreamNonBlocking));
        CK(cudaMalloc(&p[r], 64ull << 20));
        cudaEventCreate(&a[r]); cudaEventCreate(&b[r]); cudaEventCreate(&c[r]);
    }
    unsigned long long epoch = 0;
    const char* names[] = {"no fence", "fence.acq_rel.gpu", "fence.acq_rel.sys", "sys + nanosleep"};
    printf("%-20s %8s %22s\n", "4-stream barrier", "MiB", "last write end->end us");
    for (int kind = 0; kind < 4; kind++)
        for (size_t m : {0, 64}) {
            float med[21]; int k = 0;
            for (int it = 0; it < 21; it++) {
                epoch++;
                CK(cudaDeviceSynchronize());
                for (int r = 0; r < W; r++) {
                    cudaEventRecord(a[r], s[r]);
                    if (m) big_write<<<264, 256, 0, s[r]>>>(p[r], (m << 20) / 16, it);
                    cudaEventRecord(b[r], s[r]);
                    barrier<<<1, 1, 0, s[r]>>>(flags, r, W, kind, epoch);
                    cudaEventRecord(c[r], s[r]);
                }
                CK(cudaDeviceSynchronize());
                // From the last rank's write end to the last barrier end.
                float last_b = -1e9, last_c = -1e9;
                for (int r = 0; r < W; r++) {
                    float tb, tc; cudaEventElapsedTime(&tb, a[0], b[r]); cudaEventElapsedTime(&tc, a[0], c[r]);
                    last_b = std::max(last_b, tb); last_c = std::max(last_c, tc);
                }
                med[k++] = last_c - last_b;
            }
            std::sort(med, med + k);
            printf("%-20s %8zu %22.1f\n", names[kind], m, med[k / 2] * 1e3);
        }
    return 0;
}
int main() {
    size_t mb[] = {0, 1, 16, 64, 256};
    float4* p; unsigned long long* flag;
    CK(cudaMalloc(&p, 256ull << 20)); CK(cudaMalloc(&flag, 8));
    cudaStream_t s; CK(cudaStreamCreate(&s));
    cudaEvent_t a, b, c; cudaEventCreate(&a); cudaEventCreate(&b); cudaEventCreate(&c);
    const char* names[] = {"no fence", "fence.acq_rel.gpu", "fence.acq_rel.sys", "fence.sc.sys"};
    printf("%-20s %8s %12s %12s\n", "kind", "MiB", "write us", "one us");
    for (int kind = 0; kind < 4; kind++)
        for (size_t m : mb) {
            float best_w = 1e9, med[21]; int k = 0;
            for (int it = 0; it < 21; it++) {
                cudaEventRecord(a, s);
                if (m) big_write<<<1056, 256, 0, s>>>(p, (m << 20) / 16, it);
                cudaEventRecord(b, s);
                one<<<1, 1, 0, s>>>(flag, kind, it);
                cudaEventRecord(c, s);
                CK(cudaEventSynchronize(c));
                float w, o; cudaEventElapsedTime(&w, a, b); cudaEventElapsedTime(&o, b, c);
                if (w < best_w) best_w = w; med[k++] = o;
            }
            std::sort(med, med + k);
            printf("%-20s %8zu %12.1f %12.1f\n", names[kind], m, best_w * 1e3, med[k / 2] * 1e3);
        }
    return streams_barrier();
}
