// The nvcc reference for examples/gemm.rs's `staged_128`: the same algorithm written in
// CUDA C++ (a 128 x 128 block of C per four warps of 64 x 64, k in steps of 64 through
// three padded shared buffers filled two steps ahead with cp.async, one barrier a step,
// the copies issued after the first k slice's products, fragments loaded a k slice ahead
// with ldmatrix, mma.sync.m16n8k16 bf16 -> f32, tiles in groups of eight block rows), so
// that the two compilers can be compared on one algorithm in one run; the same over other
// block shapes; and `tma_128`, the 128 x 128 kernel with its tiles brought by the copy
// engine's tensor form (one `cp.async.bulk.tensor` per tile, in the 128-byte swizzle that
// its `ldmatrix` addresses undo, counted on an mbarrier per buffer).
//
//   nvcc -O3 -gencode=arch=compute_90,code=sm_90 -o gemm_mma_reference benches/reference/gemm_mma_reference.cu -lcuda
//   ./gemm_mma_reference 4096 8192
//
// Prints, per size, the median of 5 timed runs (after one warm-up) and the worst sampled
// error against a host f64 reference, relative to the sum of |products| (the bound of
// f32 accumulation), as the example does.

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

#define CHECK(call)                                                                    \
    do {                                                                               \
        cudaError_t e = (call);                                                        \
        if (e != cudaSuccess) {                                                        \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
            std::exit(1);                                                              \
        }                                                                              \
    } while (0)

__device__ __forceinline__ unsigned shared_address(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void copy16(void* dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(dst)), "l"(src));
}

__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void wait_groups() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void load_a(unsigned (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(p)));
}

__device__ __forceinline__ void load_b(unsigned (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(p)));
}

__device__ __forceinline__ void mma(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The shape of one kernel: a BM x BN block of C per WM x WN warps of 64 x 64, k in steps
// of BK through STAGES padded shared buffers.
template <int BM_, int BN_, int WM_, int WN_, int BK_, int STAGES_>
struct Shape {
    static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_, BK = BK_, STAGES = STAGES_;
    static constexpr int kThreads = 32 * WM * WN;
    static constexpr int kLdA = BK + 8, kLdB = BN + 8;  // padded rows
    static constexpr int kStageA = BM * kLdA, kStageB = BK * kLdB;
    static constexpr int kSharedBytes = STAGES * (kStageA + kStageB) * 2;
    static_assert(BM == 64 * WM && BN == 64 * WN, "warps of 64 x 64");
};

// Starts copying step `step`'s slices (A: BM x BK at column BK step of block row `br`;
// B: BK x BN at row BK step of block column `bc`) into buffer `buf`, 16 bytes a copy.
template <class S>
__device__ __forceinline__ void stage(const __nv_bfloat16* a, const __nv_bfloat16* b,
                                      __nv_bfloat16* sa, __nv_bfloat16* sb, int buf,
                                      int step, int br, int bc, int n, int k) {
    const int t = threadIdx.x;
    const __nv_bfloat16* ga = a + static_cast<size_t>(br) * k + step * S::BK;
    __nv_bfloat16* da = sa + buf * S::kStageA;
    constexpr int a_chunks = S::BK / 8, a_rows = S::kThreads / a_chunks;
#pragma unroll
    for (int i = 0; i < S::BM / a_rows; i++) {
        const int r = t / a_chunks + a_rows * i, c = (t % a_chunks) * 8;
        copy16(da + r * S::kLdA + c, ga + static_cast<size_t>(r) * k + c);
    }
    const __nv_bfloat16* gb = b + static_cast<size_t>(step) * S::BK * n + bc;
    __nv_bfloat16* db = sb + buf * S::kStageB;
    constexpr int b_chunks = S::BN / 8, b_rows = S::kThreads / b_chunks;
#pragma unroll
    for (int i = 0; i < S::BK / b_rows; i++) {
        const int r = t / b_chunks + b_rows * i, c = (t % b_chunks) * 8;
        copy16(db + r * S::kLdB + c, gb + static_cast<size_t>(r) * n + c);
    }
}

template <class S>
__global__ void __launch_bounds__(S::kThreads) gemm(const __nv_bfloat16* a, const __nv_bfloat16* b,
                                                   float* c, int m, int n, int k) {
    extern __shared__ __align__(128) unsigned char shared[];
    __nv_bfloat16* sa = reinterpret_cast<__nv_bfloat16*>(shared);
    __nv_bfloat16* sb = sa + S::STAGES * S::kStageA;
    // Tiles in groups of eight block rows, down each column of a group.
    const int blocks_n = n / S::BN, blocks_m = m / S::BM;
    const int id = blockIdx.x, per_group = 8 * blocks_n;
    const int first = (id / per_group) * 8, rows = min(blocks_m - first, 8);
    const int within = id % per_group;
    const int br = (first + within % rows) * S::BM, bc = (within / rows) * S::BN;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wr = (warp / S::WN) * 64, wc = (warp % S::WN) * 64;
    float acc[4][8][4] = {};
    const int steps = k / S::BK;
    constexpr int ahead = S::STAGES - 1;
    for (int s = 0; s < ahead; s++) {
        if (s < steps) stage<S>(a, b, sa, sb, s, s, br, bc, n, k);
        commit();
    }
    for (int s = 0; s < steps; s++) {
        wait_groups<ahead - 1>();
        __syncthreads();
        const int cur = s % S::STAGES;
        const __nv_bfloat16* ta = sa + cur * S::kStageA + wr * S::kLdA;
        const __nv_bfloat16* tb = sb + cur * S::kStageB + wc;
        unsigned fa[2][4][4], fb[2][4][4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            load_a(fa[0][i], ta + (16 * i + lane % 16) * S::kLdA + (lane / 16) * 8);
            load_b(fb[0][i], tb + (lane % 16) * S::kLdB + 16 * i + (lane / 16) * 8);
        }
#pragma unroll
        for (int kk = 0; kk < S::BK / 16; kk++) {
            const int now = kk % 2, next = (kk + 1) % 2;
            if (kk < S::BK / 16 - 1) {
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    load_a(fa[next][i],
                           ta + (16 * i + lane % 16) * S::kLdA + 16 * (kk + 1) + (lane / 16) * 8);
                    load_b(fb[next][i],
                           tb + (16 * (kk + 1) + lane % 16) * S::kLdB + 16 * i + (lane / 16) * 8);
                }
            }
#pragma unroll
            for (int i = 0; i < 4; i++) {
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    mma(acc[i][2 * j], fa[now][i], fb[now][j][0], fb[now][j][1]);
                    mma(acc[i][2 * j + 1], fa[now][i], fb[now][j][2], fb[now][j][3]);
                }
            }
            if (kk == 0) {
                if (s + ahead < steps)
                    stage<S>(a, b, sa, sb, (s + ahead) % S::STAGES, s + ahead, br, bc, n, k);
                commit();
            }
        }
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
#pragma unroll
        for (int t = 0; t < 8; t++) {
            const int row = br + wr + 16 * i + lane / 4, col = bc + wc + 8 * t + (lane % 4) * 2;
            *reinterpret_cast<float2*>(c + static_cast<size_t>(row) * n + col) =
                make_float2(acc[i][t][0], acc[i][t][1]);
            *reinterpret_cast<float2*>(c + static_cast<size_t>(row + 8) * n + col) =
                make_float2(acc[i][t][2], acc[i][t][3]);
        }
    }
}


// ----- tma_128: the tiles by the copy engine's tensor form ------------------------------

__device__ __forceinline__ void barrier_init(unsigned long long* bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(shared_address(bar)));
}

__device__ __forceinline__ void barrier_expect(unsigned long long* bar, int bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(shared_address(bar)),
                 "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void barrier_wait(unsigned long long* bar, int parity) {
    asm volatile(
        "{\n.reg .pred p;\nWAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        "@!p bra WAIT;\n}\n" ::"r"(shared_address(bar)),
        "r"(parity)
        : "memory");
}

__device__ __forceinline__ void copy_tile(void* dst, const CUtensorMap* map, int c0, int c1,
                                          unsigned long long* bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
        "[%0], [%1, {%2, %3}], [%4];\n" ::"r"(shared_address(dst)),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(shared_address(bar))
        : "memory");
}

// The byte offset of 16-byte chunk `chunk` of row `row` in a tile of 128-byte rows in the
// 128-byte swizzle (the chunk index XOR the row's place in its group of eight).
__device__ __forceinline__ int swizzled(int row, int chunk) {
    return row * 128 + ((chunk ^ (row & 7)) << 4);
}

constexpr int kTmaStage = 32768;  // A 128 x 64 and B 64 x 128 (two 64 x 64 halves), bf16
constexpr int kTmaShared = 3 * kTmaStage + 1024 + 64;

// Starts step `step`'s tiles into buffer `buf` (thread 0 only): A's 128 x 64 at (k, row),
// B's two 64 x 64 halves at (column, k).
__device__ __forceinline__ void tma_stage(const CUtensorMap* map_a, const CUtensorMap* map_b,
                                          unsigned char* tiles, unsigned long long* bars,
                                          int buf, int step, int br, int bc) {
    unsigned char* at = tiles + buf * kTmaStage;
    barrier_expect(&bars[buf], kTmaStage);
    copy_tile(at, map_a, step * 64, br, &bars[buf]);
    copy_tile(at + 16384, map_b, bc, step * 64, &bars[buf]);
    copy_tile(at + 24576, map_b, bc + 64, step * 64, &bars[buf]);
}

__global__ void __launch_bounds__(128) tma_128(const __grid_constant__ CUtensorMap map_a,
                                               const __grid_constant__ CUtensorMap map_b,
                                               float* c, int m, int n, int k) {
    extern __shared__ unsigned char shared[];
    // Tiles on a 1024-byte boundary (the swizzle's period), barriers after them.
    const unsigned pad = (1024 - (shared_address(shared) & 1023)) & 1023;
    unsigned char* tiles = shared + pad;
    unsigned long long* bars = reinterpret_cast<unsigned long long*>(tiles + 3 * kTmaStage);
    const int blocks_n = n / 128, blocks_m = m / 128;
    const int id = blockIdx.x, per_group = 8 * blocks_n;
    const int first = (id / per_group) * 8, rows = min(blocks_m - first, 8);
    const int within = id % per_group;
    const int br = (first + within % rows) * 128, bc = (within / rows) * 128;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wr = (warp / 2) * 64, wc = (warp % 2) * 64;
    float acc[4][8][4] = {};
    const int steps = k / 64;
    if (threadIdx.x == 0) {
        for (int i = 0; i < 3; i++) barrier_init(&bars[i]);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        for (int s = 0; s < 2 && s < steps; s++) tma_stage(&map_a, &map_b, tiles, bars, s, s, br, bc);
    }
    __syncthreads();
    for (int s = 0; s < steps; s++) {
        const int cur = s % 3;
        barrier_wait(&bars[cur], (s / 3) & 1);
        // Every warp is done with step s - 1's buffer, which takes step s + 2.
        __syncthreads();
        const unsigned char* ta = tiles + cur * kTmaStage;
        const unsigned char* tb = ta + 16384 + (wc / 64) * 8192;
        unsigned fa[2][4][4], fb[2][4][4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            load_a(fa[0][i], ta + swizzled(wr + 16 * i + lane % 16, lane / 16));
            load_b(fb[0][i], tb + swizzled(lane % 16, 2 * i + lane / 16));
        }
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            const int now = kk % 2, next = (kk + 1) % 2;
            if (kk < 3) {
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    load_a(fa[next][i], ta + swizzled(wr + 16 * i + lane % 16, 2 * (kk + 1) + lane / 16));
                    load_b(fb[next][i], tb + swizzled(16 * (kk + 1) + lane % 16, 2 * i + lane / 16));
                }
            }
#pragma unroll
            for (int i = 0; i < 4; i++) {
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    mma(acc[i][2 * j], fa[now][i], fb[now][j][0], fb[now][j][1]);
                    mma(acc[i][2 * j + 1], fa[now][i], fb[now][j][2], fb[now][j][3]);
                }
            }
            if (kk == 0 && threadIdx.x == 0 && s + 2 < steps)
                tma_stage(&map_a, &map_b, tiles, bars, (s + 2) % 3, s + 2, br, bc);
        }
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
#pragma unroll
        for (int t = 0; t < 8; t++) {
            const int row = br + wr + 16 * i + lane / 4, col = bc + wc + 8 * t + (lane % 4) * 2;
            *reinterpret_cast<float2*>(c + static_cast<size_t>(row) * n + col) =
                make_float2(acc[i][t][0], acc[i][t][1]);
            *reinterpret_cast<float2*>(c + static_cast<size_t>(row + 8) * n + col) =
                make_float2(acc[i][t][2], acc[i][t][3]);
        }
    }
}

// A row-major `rows` x `cols` bf16 matrix as a tensor map of `box_rows` x 64 tiles in the
// 128-byte swizzle.
CUtensorMap tile_map(const void* base, int rows, int cols, int box_rows) {
    CUtensorMap map;
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols) * 2};
    const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
    const cuuint32_t unit[2] = {1, 1};
    const CUresult r = cuTensorMapEncodeTiled(
        &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box,
        unit, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        std::fprintf(stderr, "cuTensorMapEncodeTiled: error %d\n", static_cast<int>(r));
        std::exit(1);
    }
    return map;
}

// Runs `gemm<S>` (or `tma_128` when `tma`) at `size`^3 and prints its time and error.
template <class S>
void run(const char* name, int size, bool tma = false) {
    const int m = size, n = size, k = size;
    std::mt19937 rng(size);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<__nv_bfloat16> ha(static_cast<size_t>(m) * k), hb(static_cast<size_t>(k) * n);
    for (auto& x : ha) x = __float2bfloat16(uniform(rng));
    for (auto& x : hb) x = __float2bfloat16(uniform(rng));
    __nv_bfloat16 *da, *db;
    float* dc;
    CHECK(cudaMalloc(&da, ha.size() * 2));
    CHECK(cudaMalloc(&db, hb.size() * 2));
    CHECK(cudaMalloc(&dc, static_cast<size_t>(m) * n * 4));
    CHECK(cudaMemcpy(da, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice));
    CHECK(cudaFuncSetAttribute(gemm<S>, cudaFuncAttributeMaxDynamicSharedMemorySize, S::kSharedBytes));
    CHECK(cudaFuncSetAttribute(tma_128, cudaFuncAttributeMaxDynamicSharedMemorySize, kTmaShared));
    const CUtensorMap map_a = tile_map(da, m, k, 128), map_b = tile_map(db, k, n, 64);
    const dim3 grid((m / S::BM) * (n / S::BN)), block(S::kThreads);
    auto launch = [&] {
        if (tma) {
            tma_128<<<grid, block, kTmaShared>>>(map_a, map_b, dc, m, n, k);
        } else {
            gemm<S><<<grid, block, S::kSharedBytes>>>(da, db, dc, m, n, k);
        }
    };
    CHECK(cudaMemset(dc, 0xff, static_cast<size_t>(m) * n * 4));
    launch();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    std::vector<float> times;
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    for (int r = 0; r < 5; r++) {
        CHECK(cudaEventRecord(start));
        launch();
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        times.push_back(ms);
    }
    std::sort(times.begin(), times.end());
    const float ms = times[times.size() / 2];
    std::vector<float> hc(static_cast<size_t>(m) * n);
    CHECK(cudaMemcpy(hc.data(), dc, hc.size() * 4, cudaMemcpyDeviceToHost));
    double worst = 0;
    std::uniform_int_distribution<int> pick(0, size - 1);
    for (int s = 0; s < 256; s++) {
        const int i = pick(rng), j = pick(rng);
        double want = 0, bound = 0;
        for (int p = 0; p < k; p++) {
            const double x = __bfloat162float(ha[static_cast<size_t>(i) * k + p]);
            const double y = __bfloat162float(hb[static_cast<size_t>(p) * n + j]);
            want += x * y;
            bound += std::fabs(x * y);
        }
        const double e = std::fabs(hc[static_cast<size_t>(i) * n + j] - want) / bound;
        if (!(e <= worst)) worst = e;  // a NaN (an unwritten element) stays the worst
    }
    const double tflops = 2.0 * m * n * k / (ms * 1e-3) / 1e12;
    std::printf("nvcc %-32s %d^3: %.3f ms %.1f TFLOP/s max err %.2e %s\n", name, size, ms,
                tflops, worst, worst < 1e-5 ? "ok" : "WRONG");
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
}

}  // namespace

int main(int argc, char** argv) {
    for (int i = 1; i < argc; i++) {
        const int size = std::atoi(argv[i]);
        if (size <= 0 || size % 256 != 0) {
            std::fprintf(stderr, "size %s: a positive multiple of 256\n", argv[i]);
            return 2;
        }
        run<Shape<128, 128, 2, 2, 64, 3>>("staged_128 (128x128, k64, 3 st)", size);
        run<Shape<128, 256, 2, 4, 64, 3>>("128x256, 8 warps, k64, 3 st", size);
        run<Shape<256, 128, 4, 2, 64, 3>>("256x128, 8 warps, k64, 3 st", size);
        run<Shape<128, 256, 2, 4, 32, 4>>("128x256, 8 warps, k32, 4 st", size);
        run<Shape<256, 128, 4, 2, 32, 4>>("256x128, 8 warps, k32, 4 st", size);
        run<Shape<128, 128, 2, 2, 32, 4>>("128x128, 4 warps, k32, 4 st", size);
        run<Shape<128, 128, 2, 2, 64, 3>>("tma_128 (128x128, k64, 3 st, TMA)", size, true);
    }
    return 0;
}
