//! Kernels compiled by `#[iris::kernel]`, launched through the typed launcher, over
//! symmetric memory at 1, 2, 4 and 8 ranks (threads), on the CPU backend and on every GPU
//! backend present. Inputs are random; outputs are poisoned first so an element nobody
//! wrote fails the check.

mod common;

use common::{backends, random_f32, random_u32, world_sizes};
use iris::prelude::*;
use iris::{LaunchConfig, World};

/// Every rank pushes its `n` inputs into slot `me` of every peer's `out`.
#[iris::kernel]
pub fn push_all_gather(input: *const f32, out: Symmetric<f32>, n: u64, me: u32, world: u32) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    if i < n {
        let v = unsafe { *input.add(i as usize) };
        for peer in 0..world {
            iris::store(out.add((me as u64 * n + i) as usize), v, peer);
        }
    }
}

/// Reads the next rank's copy of `src` into the local `out` (remote load).
#[iris::kernel]
pub fn pull_from_next(src: Symmetric<u32>, out: *mut u32, n: u64, me: u32, world: u32) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    if i < n {
        let next = (me + 1) % world;
        unsafe { *out.add(i as usize) = iris::load(src.add(i as usize), next) };
    }
}

/// Reads the previous rank's copy of `src` into the local `out` through a plain pointer
/// (`peer_ptr`: the translation made once, then ordinary loads).
#[iris::kernel]
pub fn pull_through_peer_ptr(src: Symmetric<u32>, out: *mut u32, n: u64, me: u32, world: u32) {
    let prev = src.peer_ptr((me + world - 1) % world) as *const u32;
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    if i < n {
        unsafe { *out.add(i as usize) = *prev.add(i as usize) };
    }
}

/// Every thread adds `1 + me` to the counter of every rank, at system scope.
#[iris::kernel]
pub fn count_everywhere(counter: Symmetric<u64>, me: u32, world: u32) {
    let mut peer = 0;
    while peer < world {
        iris::atomic_add(
            counter,
            1 + me as u64,
            peer,
            Ordering::Relaxed,
            Scope::System,
        );
        peer += 1;
    }
}

/// Reverses each block's 256 elements through block-shared memory.
#[iris::kernel]
pub fn reverse_blocks(input: *const f32, out: *mut f32) {
    let tile = shared_array::<f32, 256>();
    let t = thread_idx_x() as usize;
    let base = (block_idx_x() * 256) as usize;
    unsafe { *tile.add(t) = *input.add(base + t) };
    sync_threads();
    unsafe { *out.add(base + t) = *tile.add(255 - t) };
}

#[test]
fn all_gather_pushes_every_rank_to_every_peer() {
    for backend in backends() {
        for world in world_sizes() {
            let n = 1000usize; // not a multiple of the block size
            let ok = World::threads(world)
                .backend(backend)
                .heap_bytes(1 << 20)
                .run(|iris| {
                    let mine = random_f32(n);
                    let input = iris.from_slice(&mine)?;
                    let out = iris.symmetric_full::<f32>(n * world, f32::NAN)?;
                    push_all_gather::launch(
                        iris,
                        LaunchConfig::for_elements(n as u64, 128),
                        &input,
                        &out,
                        n as u64,
                        iris.rank() as u32,
                        world as u32,
                    )?;
                    iris.barrier()?;
                    let everyone = iris.all_gather(mine)?;
                    let got = out.to_vec()?;
                    let want: Vec<f32> = everyone.concat();
                    Ok(got == want)
                })
                .unwrap_or_else(|e| panic!("{backend} at {world} ranks: {e}"));
            assert!(
                ok.iter().all(|&x| x),
                "{backend} at {world} ranks: gathered data differs"
            );
        }
    }
}

#[test]
fn remote_load_reads_the_next_ranks_copy() {
    for backend in backends() {
        for world in world_sizes() {
            let n = 777usize;
            let results = World::threads(world)
                .backend(backend)
                .heap_bytes(1 << 20)
                .run(|iris| {
                    let mine = random_u32(n);
                    let src = iris.symmetric_from_slice(&mine)?;
                    let out = iris.full::<u32>(n, 0xDEAD_BEEF)?;
                    pull_from_next::launch(
                        iris,
                        LaunchConfig::for_elements(n as u64, 64),
                        &src,
                        &out,
                        n as u64,
                        iris.rank() as u32,
                        world as u32,
                    )?;
                    iris.barrier()?;
                    let everyone = iris.all_gather(mine)?;
                    let next = (iris.rank() + 1) % world;
                    Ok(out.to_vec()? == everyone[next])
                })
                .unwrap_or_else(|e| panic!("{backend} at {world} ranks: {e}"));
            assert!(
                results.iter().all(|&x| x),
                "{backend} at {world} ranks: remote load read wrong data"
            );
        }
    }
}

#[test]
fn peer_ptr_reads_the_previous_ranks_copy() {
    for backend in backends() {
        for world in world_sizes() {
            let n = 1000usize;
            let results = World::threads(world)
                .backend(backend)
                .heap_bytes(1 << 20)
                .run(|iris| {
                    let mine = random_u32(n);
                    let src = iris.symmetric_from_slice(&mine)?;
                    let out = iris.full::<u32>(n, 0xDEAD_BEEF)?;
                    pull_through_peer_ptr::launch(
                        iris,
                        LaunchConfig::for_elements(n as u64, 64),
                        &src,
                        &out,
                        n as u64,
                        iris.rank() as u32,
                        world as u32,
                    )?;
                    iris.barrier()?;
                    let everyone = iris.all_gather(mine)?;
                    let prev = (iris.rank() + world - 1) % world;
                    Ok(out.to_vec()? == everyone[prev])
                })
                .unwrap_or_else(|e| panic!("{backend} at {world} ranks: {e}"));
            assert!(
                results.iter().all(|&x| x),
                "{backend} at {world} ranks: peer_ptr read wrong data"
            );
        }
    }
}

#[test]
fn cross_rank_atomic_counter_counts_every_add() {
    for backend in backends() {
        for world in world_sizes() {
            let (blocks, threads) = (3u32, 64u32);
            let counts = World::threads(world)
                .backend(backend)
                .heap_bytes(1 << 20)
                .run(|iris| {
                    let counter = iris.symmetric_zeros::<u64>(1)?;
                    count_everywhere::launch(
                        iris,
                        (blocks, threads),
                        &counter,
                        iris.rank() as u32,
                        world as u32,
                    )?;
                    iris.barrier()?;
                    Ok(counter.to_vec()?[0])
                })
                .unwrap_or_else(|e| panic!("{backend} at {world} ranks: {e}"));
            // Every rank r adds (1 + r) once per thread to every counter.
            let per_thread: u64 = (1..=world as u64).sum();
            let want = per_thread * (blocks * threads) as u64;
            assert!(
                counts.iter().all(|&c| c == want),
                "{backend} at {world} ranks: {counts:?}, want {want}"
            );
        }
    }
}

#[test]
fn block_barrier_orders_shared_memory() {
    for backend in backends() {
        let blocks = 5usize;
        let results = World::threads(1)
            .backend(backend)
            .heap_bytes(1 << 20)
            .run(|iris| {
                let data = random_f32(blocks * 256);
                let input = iris.from_slice(&data)?;
                let out = iris.full::<f32>(blocks * 256, f32::NAN)?;
                reverse_blocks::launch(iris, (blocks as u32, 256), &input, &out)?;
                let got = out.to_vec()?;
                let want: Vec<f32> = data
                    .chunks(256)
                    .flat_map(|c| c.iter().rev().copied())
                    .collect();
                Ok(got == want)
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        assert!(
            results[0],
            "{backend}: block reversal through shared memory is wrong"
        );
    }
}
