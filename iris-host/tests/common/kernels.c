/* CPU kernels implementing the iris CPU ABI (CpuKernelEntry), for the runtime's tests. */
#include <stdint.h>

typedef struct {
    uint32_t thread_idx[3];
    uint32_t block_idx[3];
    uint32_t block_dim[3];
    uint32_t grid_dim[3];
    uint8_t *shared;
    void (*barrier)(void *);
    void *barrier_state;
} ctx_t;

#define ARG(ty, i) (*(ty *)args[i])

static uint64_t block_linear(const ctx_t *c) {
    return c->block_idx[0] + (uint64_t)c->grid_dim[0] * (c->block_idx[1] + (uint64_t)c->grid_dim[1] * c->block_idx[2]);
}

static uint64_t thread_linear(const ctx_t *c) {
    return c->thread_idx[0] + (uint64_t)c->block_dim[0] * (c->thread_idx[1] + (uint64_t)c->block_dim[1] * c->thread_idx[2]);
}

static uint64_t block_threads(const ctx_t *c) {
    return (uint64_t)c->block_dim[0] * c->block_dim[1] * c->block_dim[2];
}

/* write_ids(out: *mut u32, n: u64): out[2g] = linear block, out[2g+1] = linear thread. */
void write_ids(const ctx_t *c, void **args) {
    uint32_t *out = ARG(uint32_t *, 0);
    uint64_t n = ARG(uint64_t, 1);
    uint64_t g = block_linear(c) * block_threads(c) + thread_linear(c);
    if (g < n) {
        out[2 * g] = (uint32_t)block_linear(c);
        out[2 * g + 1] = (uint32_t)thread_linear(c);
    }
}

/* block_reverse(input: *const u32, out: *mut u32, dirty: *mut u32, active: u32):
 * threads t >= active return at once; the others reverse their values within the block
 * through shared memory, with two barriers. dirty[block] counts shared slots that were
 * not zero when the block started. */
void block_reverse(const ctx_t *c, void **args) {
    const uint32_t *input = ARG(const uint32_t *, 0);
    uint32_t *out = ARG(uint32_t *, 1);
    uint32_t *dirty = ARG(uint32_t *, 2);
    uint32_t active = ARG(uint32_t, 3);
    uint32_t t = (uint32_t)thread_linear(c);
    if (t >= active)
        return;
    uint32_t *shared = (uint32_t *)c->shared;
    uint64_t b = block_linear(c);
    if (shared[t] != 0)
        __atomic_fetch_add(&dirty[b], 1, __ATOMIC_RELAXED);
    c->barrier(c->barrier_state);
    shared[t] = input[b * active + t];
    c->barrier(c->barrier_state);
    out[b * active + t] = shared[active - 1 - t];
    c->barrier(c->barrier_state);
    shared[t] = 0xdeadbeef; /* the next block must see zeros again */
}

typedef struct { float lanes[4]; } __attribute__((aligned(16))) f32x4;

/* values(out: *mut f64, a: u8, b: u16, v: f32x4, d: f64): out[0] = a + b + sum(v) + d. */
void values(const ctx_t *c, void **args) {
    if (thread_linear(c) != 0 || block_linear(c) != 0)
        return;
    double *out = ARG(double *, 0);
    uint8_t a = ARG(uint8_t, 1);
    uint16_t b = ARG(uint16_t, 2);
    f32x4 v = ARG(f32x4, 3);
    double d = ARG(double, 4);
    out[0] = a + b + v.lanes[0] + v.lanes[1] + v.lanes[2] + v.lanes[3] + d;
}

/* all_gather(input: *const f32, out: Symmetric<f32>, n: u64, me: u32, world: u32):
 * every rank stores its n inputs at out[me * n + i] in every peer's copy, translating the
 * local pointer with the allocation's table: table[peer] + (ptr - base). */
void all_gather(const ctx_t *c, void **args) {
    const float *input = ARG(const float *, 0);
    float *out = ARG(float *, 1);
    uint64_t base = ARG(uint64_t, 2);
    const uint64_t *table = ARG(const uint64_t *, 3);
    uint64_t n = ARG(uint64_t, 4);
    uint32_t me = ARG(uint32_t, 5);
    uint32_t world = ARG(uint32_t, 6);
    uint64_t i = block_linear(c) * block_threads(c) + thread_linear(c);
    if (i >= n)
        return;
    float v = input[i];
    uint64_t local = (uint64_t)(uintptr_t)(out + me * n + i);
    for (uint32_t peer = 0; peer < world; peer++) {
        float *dst = (float *)(uintptr_t)(table[peer] + (local - base));
        *dst = v;
    }
}

/* spin(flag: *const u32): waits until *flag != 0 (for timeout tests). */
void spin(const ctx_t *c, void **args) {
    (void)c;
    const uint32_t *flag = ARG(const uint32_t *, 0);
    while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) == 0) {
    }
}

/* remote_add(counter: Symmetric<u64>, per_thread: u64, world: u32): every thread adds
 * per_thread to the counter of every rank (its own included), translating the local
 * pointer with the allocation's table, with sequentially consistent atomics (system
 * scope: the peers may be other processes). Each rank's counter ends at
 * world * threads * per_thread. */
void remote_add(const ctx_t *c, void **args) {
    uint64_t *counter = ARG(uint64_t *, 0);
    uint64_t base = ARG(uint64_t, 1);
    const uint64_t *table = ARG(const uint64_t *, 2);
    uint64_t per_thread = ARG(uint64_t, 3);
    uint32_t world = ARG(uint32_t, 4);
    (void)c;
    uint64_t local = (uint64_t)(uintptr_t)counter;
    for (uint32_t peer = 0; peer < world; peer++) {
        uint64_t *dst = (uint64_t *)(uintptr_t)(table[peer] + (local - base));
        __atomic_fetch_add(dst, per_thread, __ATOMIC_SEQ_CST);
    }
}
