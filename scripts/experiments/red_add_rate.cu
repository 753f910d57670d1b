// How fast the device adds f32 values into memory with reductions (red.global.add),
// scalar and as vectors of 2 and 4 (sm_90), against plain stores of the same bytes:
// 256 MiB of adds into 64 MiB (every element 4 times), the traffic of a fused
// matmul + reduce-scatter at 4 ranks of 4096 x 4096 whose tiles are added into their
// owners' sums. Measured for scripts/experiments/add-into-owners.patch
// (docs/performance.md). nvcc -O3 -arch=sm_90a red_add_rate.cu
#include <cstdio>
#include <cuda_runtime.h>

__global__ void store4(float4* out, size_t n4, int reps) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (int r = 0; r < reps; r++)
        for (size_t j = i; j < n4; j += stride) out[j] = make_float4(1.f, 2.f, 3.f, (float)r);
}

__global__ void red1(float* out, size_t n, int reps) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (int r = 0; r < reps; r++)
        for (size_t j = i; j < n; j += stride)
            asm volatile("red.global.add.f32 [%0], %1;" ::"l"(out + j), "f"(1.0f) : "memory");
}

__global__ void red2(float* out, size_t n, int reps) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (int r = 0; r < reps; r++)
        for (size_t j = i; j < n / 2; j += stride)
            asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(out + 2 * j), "f"(1.0f),
                         "f"(2.0f)
                         : "memory");
}

__global__ void red4(float* out, size_t n, int reps) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (int r = 0; r < reps; r++)
        for (size_t j = i; j < n / 4; j += stride)
            asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(out + 4 * j),
                         "f"(1.0f), "f"(2.0f), "f"(3.0f), "f"(4.0f)
                         : "memory");
}

int main() {
    const size_t out_bytes = 64ull << 20;  // four owners' 16 MiB
    const size_t n = out_bytes / 4;
    const int reps = 4;                      // every element added 4 times: 256 MiB of adds
    float* out;
    cudaMalloc(&out, out_bytes);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    int sms;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    const char* names[] = {"store.v4 (plain)", "red.add.f32", "red.add.v2.f32", "red.add.v4.f32"};
    for (int k = 0; k < 4; k++) {
        float best = 1e9;
        for (int it = 0; it < 6; it++) {
            cudaEventRecord(a);
            dim3 grid(sms * 8), block(256);
            if (k == 0) store4<<<grid, block>>>((float4*)out, n / 4, reps);
            if (k == 1) red1<<<grid, block>>>(out, n, reps);
            if (k == 2) red2<<<grid, block>>>(out, n, reps);
            if (k == 3) red4<<<grid, block>>>(out, n, reps);
            cudaEventRecord(b);
            cudaEventSynchronize(b);
            float ms;
            cudaEventElapsedTime(&ms, a, b);
            if (it > 0 && ms < best) best = ms;
        }
        cudaError_t e = cudaGetLastError();
        printf("%-20s 256 MiB into 64 MiB: %.3f ms  %.0f GB/s of values  %s\n", names[k], best,
               (double)out_bytes * reps / best / 1e6, cudaGetErrorString(e));
    }
    return 0;
}
