use iris::prelude::*;

// The copy engine moves multiples of 16 bytes.
#[iris::kernel]
pub fn twelve_bytes(dst: *mut [f32; 3], src: *const [f32; 3]) {
    let bar = shared_array::<u64, 1>();
    copy_bulk(dst, src, bar);
}

// A barrier is a `u64` in shared memory.
#[iris::kernel]
pub fn narrow_barrier(dst: *mut [f32; 4], src: *const [f32; 4]) {
    let bar = shared_array::<u32, 2>();
    copy_bulk(dst, src, bar);
}

// A tile map is the `*const u64` buffer `Iris::tile_map` makes.
#[iris::kernel]
pub fn map_of_words(map: *const u32, dst: *mut f32) {
    let bar = shared_array::<u64, 1>();
    copy_tile(dst, map, 0, 0, bar);
}

fn main() {}
