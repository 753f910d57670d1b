// The peer of the iris ping-pong case, in CUDA C++: two "ranks" on one GPU, each its own
// stream and its own flag allocation, one thread each; rank 0 sets the peer's flag to
// `ping` (release, system scope) and waits for its own to reach `pong` (acquire, system
// scope); rank 1 the mirror. The same kernel as the iris one, translation included.
//
//   nvcc -O3 -arch=sm_90 -o pingpong pingpong.cu && ./pingpong
//
// Also the same kernel at GPU scope and with volatile polling, to show what the scope costs.
// Prints one JSON object a variant: {"ref": "cuda", "name": "ping_pong", "us_per_round_trip": ...}.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                        \
    do {                                                                                \
        cudaError_t e_ = (x);                                                           \
        if (e_ != cudaSuccess) {                                                        \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

__device__ __forceinline__ uint32_t* translate(uint32_t* p, uint64_t base, const uint64_t* table, uint32_t peer) {
    return (uint32_t*)(__ldg(table + peer) + ((uint64_t)p - base));
}

// SCOPE 0: release/acquire at system scope (the iris kernel); 1: at GPU scope (the iris
// kernel with Scope::Device); 2: volatile polling, __threadfence_system before the store.
template <int SCOPE>
__device__ __forceinline__ uint32_t load_acquire_sys(const uint32_t* p) {
    uint32_t v;
    if (SCOPE == 0)
        asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    else if (SCOPE == 1)
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    else
        v = *(volatile const uint32_t*)p;
    return v;
}

template <int SCOPE>
__device__ __forceinline__ void store_release_sys(uint32_t* p, uint32_t v) {
    if (SCOPE == 0)
        asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
    else if (SCOPE == 1)
        asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
    else {
        __threadfence_system();
        *(volatile uint32_t*)p = v;
    }
}

template <int SCOPE>
__global__ void ping_pong(uint32_t* flag, uint64_t base, const uint64_t* table, uint32_t rounds, uint32_t epoch,
                          uint32_t me, uint32_t spin_limit, uint32_t* failed) {
    uint32_t peer = 1 - me;
    for (uint32_t k = 0; k < rounds; k++) {
        uint32_t ping = epoch + 2 * k + 1, pong = ping + 1;
        if (me == 0) {
            store_release_sys<SCOPE>(translate(flag, base, table, peer), ping);
            uint32_t spins = 0;
            while (load_acquire_sys<SCOPE>(translate(flag, base, table, me)) != pong)
                if (++spins > spin_limit) { *failed = 1; return; }
        } else {
            uint32_t spins = 0;
            while (load_acquire_sys<SCOPE>(translate(flag, base, table, me)) != ping)
                if (++spins > spin_limit) { *failed = 1; return; }
            store_release_sys<SCOPE>(translate(flag, base, table, peer), pong);
        }
    }
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

int main() {
    const uint32_t shortr = 1000, longr = 21000, spin_limit = 1u << 22;
    uint32_t *flag[2], *failed;
    uint64_t* table[2];
    for (int r = 0; r < 2; r++) {
        CHECK(cudaMalloc(&flag[r], 256));
        CHECK(cudaMemset(flag[r], 0, 256));
    }
    uint64_t bases[2] = {(uint64_t)flag[0], (uint64_t)flag[1]};
    for (int r = 0; r < 2; r++) {
        CHECK(cudaMalloc(&table[r], sizeof bases));
        CHECK(cudaMemcpy(table[r], bases, sizeof bases, cudaMemcpyHostToDevice));
    }
    CHECK(cudaMalloc(&failed, 4));
    CHECK(cudaMemset(failed, 0, 4));
    cudaStream_t s[2];
    for (int r = 0; r < 2; r++) CHECK(cudaStreamCreateWithFlags(&s[r], cudaStreamNonBlocking));
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    uint32_t epoch = 0;
    const char* names[3] = {"ping_pong", "ping_pong_device", "ping_pong_volatile"};
    void (*kernels[3])(uint32_t*, uint64_t, const uint64_t*, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t*) = {
        ping_pong<0>, ping_pong<1>, ping_pong<2>};
    for (int scope = 0; scope < 3; scope++) {
        // Both ranks' kernels are queued back to back, each on its own stream; the events
        // are on rank 0's stream.
        auto run = [&](uint32_t rounds) {
            CHECK(cudaDeviceSynchronize());
            CHECK(cudaEventRecord(a, s[0]));
            for (uint32_t r = 0; r < 2; r++)
                kernels[scope]<<<1, 1, 0, s[r]>>>(flag[r], bases[r], table[r], rounds, epoch, r, spin_limit, failed);
            CHECK(cudaEventRecord(b, s[0]));
            CHECK(cudaEventSynchronize(b));
            CHECK(cudaDeviceSynchronize());
            CHECK(cudaGetLastError());
            float ms;
            CHECK(cudaEventElapsedTime(&ms, a, b));
            epoch += 2 * rounds;
            return (double)ms;
        };
        for (int i = 0; i < 3; i++) run(shortr);
        std::vector<double> ts, tl;
        for (int i = 0; i < 7; i++) {
            ts.push_back(run(shortr));
            tl.push_back(run(longr));
        }
        uint32_t bad = 1;
        CHECK(cudaMemcpy(&bad, failed, 4, cudaMemcpyDeviceToHost));
        double t_short = median(ts), t_long = median(tl);
        printf("{\"ref\": \"cuda\", \"name\": \"%s\", \"us_per_round_trip\": %.6f, "
               "\"us_per_round_trip_long_only\": %.6f, \"rounds_short\": %u, \"rounds_long\": %u, \"correct\": %s}\n",
               names[scope], (t_long - t_short) * 1e3 / (longr - shortr), t_long * 1e3 / longr, shortr, longr,
               bad == 0 ? "true" : "false");
        fflush(stdout);
    }
    return 0;
}
