// The peer of the iris bandwidth cases, in CUDA C++: the same kernels (grid-stride,
// 16-byte vectors, translation `table[peer] + (p - base)`, 256 threads x 8 blocks per SM),
// the same hash data, and the runtime's memset and device-to-device copy as its own
// ceilings. Two "ranks" are two allocations of each symmetric buffer on one GPU.
//
//   nvcc -O3 -arch=sm_90 -o bandwidth bandwidth.cu && ./bandwidth [bytes]
//
// Prints one JSON object a line: {"ref": "cuda", "name": ..., "bytes_moved": ..., "ms": ...}.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#define CHECK(x)                                                                        \
    do {                                                                                \
        cudaError_t e_ = (x);                                                           \
        if (e_ != cudaSuccess) {                                                        \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

__device__ __forceinline__ float hashed(uint32_t e, uint32_t seed) {
    return (float)(e * 2654435761u ^ seed);
}

__device__ __forceinline__ float4 hashed4(uint64_t i, uint32_t seed) {
    uint32_t e = (uint32_t)i * 4u;
    return make_float4(hashed(e, seed), hashed(e + 1, seed), hashed(e + 2, seed), hashed(e + 3, seed));
}

// A symmetric pointer: the local pointer, the local base, the table of peer bases.
template <typename T>
__device__ __forceinline__ T* translate(const T* p, uint64_t base, const uint64_t* __restrict__ table, uint32_t peer) {
    return (T*)(__ldg(table + peer) + ((uint64_t)p - base));
}

__global__ void fill_hash(float4* out, uint64_t n, uint32_t seed) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = hashed4(i, seed);
}

__global__ void check_hash(const float4* data, uint64_t n, uint32_t seed, uint32_t* bad) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float4 v = data[i], w = hashed4(i, seed);
        if (v.x != w.x || v.y != w.y || v.z != w.z || v.w != w.w) *bad = 1;
    }
}

__global__ void store_v4(float4* dst, uint64_t dst_base, const uint64_t* __restrict__ dst_table, uint64_t n,
                         uint32_t peer, uint32_t seed) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        *translate(dst + i, dst_base, dst_table, peer) = hashed4(i, seed);
}

__global__ void load_v4(const float4* src, uint64_t src_base, const uint64_t* __restrict__ src_table, float4* dst,
                        uint64_t n, uint32_t peer) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = *translate(src + i, src_base, src_table, peer);
}

__global__ void copy_v4(const float4* src, uint64_t src_base, const uint64_t* __restrict__ src_table, float4* dst,
                        uint64_t dst_base, const uint64_t* __restrict__ dst_table, uint64_t n, uint32_t from_peer,
                        uint32_t to_peer) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        *translate(dst + i, dst_base, dst_table, to_peer) = *translate(src + i, src_base, src_table, from_peer);
}

// The chunked shape (as Triton launches): block b covers vectors [b * 4 * blockDim, ...),
// four a thread, one block per chunk.
#define CHUNK_LOOP(body)                                                                  \
    for (uint64_t base = (uint64_t)blockIdx.x * blockDim.x * 4; base < n;                 \
         base += (uint64_t)gridDim.x * blockDim.x * 4)                                    \
        _Pragma("unroll") for (int k = 0; k < 4; k++) {                                   \
            uint64_t i = base + (uint64_t)k * blockDim.x + threadIdx.x;                   \
            if (i < n) { body; }                                                          \
        }

__global__ void store_v4c(float4* dst, uint64_t dst_base, const uint64_t* __restrict__ dst_table, uint64_t n,
                          uint32_t peer, uint32_t seed) {
    CHUNK_LOOP(*translate(dst + i, dst_base, dst_table, peer) = hashed4(i, seed))
}

__global__ void load_v4c(const float4* src, uint64_t src_base, const uint64_t* __restrict__ src_table, float4* dst,
                         uint64_t n, uint32_t peer) {
    CHUNK_LOOP(dst[i] = *translate(src + i, src_base, src_table, peer))
}

__global__ void copy_v4c(const float4* src, uint64_t src_base, const uint64_t* __restrict__ src_table, float4* dst,
                         uint64_t dst_base, const uint64_t* __restrict__ dst_table, uint64_t n, uint32_t from_peer,
                         uint32_t to_peer) {
    CHUNK_LOOP(*translate(dst + i, dst_base, dst_table, to_peer) = *translate(src + i, src_base, src_table, from_peer))
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

template <typename F>
static double time_ms(F op, int warmup = 3, int repeats = 15) {
    for (int i = 0; i < warmup; i++) op();
    CHECK(cudaDeviceSynchronize());
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    std::vector<double> t;
    for (int i = 0; i < repeats; i++) {
        CHECK(cudaEventRecord(a));
        op();
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
    }
    CHECK(cudaGetLastError());
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    return median(t);
}

static void report(const char* name, double bytes_moved, double ms, bool ok) {
    printf("{\"ref\": \"cuda\", \"name\": \"%s\", \"bytes_moved\": %.0f, \"ms\": %.6f, \"gbps\": %.3f, \"correct\": %s}\n",
           name, bytes_moved, ms, bytes_moved / (ms * 1e-3) / 1e9, ok ? "true" : "false");
    fflush(stdout);
}

int main(int argc, char** argv) {
    size_t bytes = argc > 1 ? strtoull(argv[1], nullptr, 0) : (size_t(1) << 30);
    uint64_t n = bytes / 16;
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    dim3 block(256), grid((unsigned)std::min<uint64_t>((n + 255) / 256, (uint64_t)prop.multiProcessorCount * 8));
    uint32_t seed = (0x9e3779b9u ^ (uint32_t)time(nullptr)) | 1u;

    // Two ranks' copies of symmetric buffers A and B, a plain destination D, and the tables.
    float4 *a0, *a1, *b0, *b1, *d;
    CHECK(cudaMalloc(&a0, bytes));
    CHECK(cudaMalloc(&a1, bytes));
    CHECK(cudaMalloc(&b0, bytes));
    CHECK(cudaMalloc(&b1, bytes));
    CHECK(cudaMalloc(&d, bytes));
    uint64_t ha[2] = {(uint64_t)a0, (uint64_t)a1}, hb[2] = {(uint64_t)b0, (uint64_t)b1};
    uint64_t *ta, *tb;
    uint32_t* bad;
    CHECK(cudaMalloc(&ta, sizeof ha));
    CHECK(cudaMalloc(&tb, sizeof hb));
    CHECK(cudaMalloc(&bad, 4));
    CHECK(cudaMemcpy(ta, ha, sizeof ha, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(tb, hb, sizeof hb, cudaMemcpyHostToDevice));
    auto verify = [&](const float4* p, uint32_t s) {
        CHECK(cudaMemset(bad, 0, 4));
        check_hash<<<grid, block>>>(p, n, s, bad);
        uint32_t h = 1;
        CHECK(cudaMemcpy(&h, bad, 4, cudaMemcpyDeviceToHost));
        return h == 0;
    };

    fill_hash<<<grid, block>>>(a1, n, seed);  // rank 1's copy of A: the source
    CHECK(cudaDeviceSynchronize());

    double ms = time_ms([&] { CHECK(cudaMemsetAsync(d, 0x5a, bytes)); });
    report("memset", bytes, ms, true);
    ms = time_ms([&] { CHECK(cudaMemcpyAsync(d, a1, bytes, cudaMemcpyDeviceToDevice)); });
    report("memcpy_dtod", 2.0 * bytes, ms, verify(d, seed));

    // Rank 0 stores into rank 1's copy of B.
    CHECK(cudaMemset(b1, 0xff, bytes));
    ms = time_ms([&] { store_v4<<<grid, block>>>(b0, (uint64_t)b0, tb, n, 1, seed ^ 5); });
    report("store_v4", bytes, ms, verify(b1, seed ^ 5));

    // Rank 0 loads rank 1's copy of A into D.
    CHECK(cudaMemset(d, 0xff, bytes));
    ms = time_ms([&] { load_v4<<<grid, block>>>(a0, (uint64_t)a0, ta, d, n, 1); });
    report("load_v4", 2.0 * bytes, ms, verify(d, seed));

    // Copy from rank 1's copy of A into rank 0's copy of B.
    CHECK(cudaMemset(b0, 0xff, bytes));
    ms = time_ms([&] { copy_v4<<<grid, block>>>(a0, (uint64_t)a0, ta, b0, (uint64_t)b0, tb, n, 1, 0); });
    report("copy_v4", 2.0 * bytes, ms, verify(b0, seed));

    // The chunked shape.
    dim3 cgrid((unsigned)((n + 1023) / 1024));
    CHECK(cudaMemset(b1, 0xff, bytes));
    ms = time_ms([&] { store_v4c<<<cgrid, block>>>(b0, (uint64_t)b0, tb, n, 1, seed ^ 9); });
    report("store_v4c", bytes, ms, verify(b1, seed ^ 9));
    CHECK(cudaMemset(d, 0xff, bytes));
    ms = time_ms([&] { load_v4c<<<cgrid, block>>>(a0, (uint64_t)a0, ta, d, n, 1); });
    report("load_v4c", 2.0 * bytes, ms, verify(d, seed));
    CHECK(cudaMemset(b0, 0xff, bytes));
    ms = time_ms([&] { copy_v4c<<<cgrid, block>>>(a0, (uint64_t)a0, ta, b0, (uint64_t)b0, tb, n, 1, 0); });
    report("copy_v4c", 2.0 * bytes, ms, verify(b0, seed));

    CHECK(cudaDeviceSynchronize());
    return 0;
}
