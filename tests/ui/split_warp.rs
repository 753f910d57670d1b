// Warp operations and block barriers where some lanes may not reach them.
#[iris::kernels]
mod split {
    use iris::prelude::*;

    fn total(v: f32) -> f32 {
        warp_reduce_add(v)
    }

    #[kernel]
    pub fn half_a_warp(p: *mut f32) {
        if lane_id() < 16 {
            unsafe { *p = warp_reduce_add(1.0) };
        }
    }

    #[kernel]
    pub fn through_a_device_function(p: *mut f32) {
        if thread_idx_x() % 2 == 0 {
            unsafe { *p = total(1.0) };
        }
    }

    #[kernel]
    pub fn a_barrier_for_one_thread(p: *mut f32) {
        if thread_idx_x() == 0 {
            sync_threads();
        }
    }

    #[kernel]
    pub fn groups_of_32_split_amd_warps(p: *mut f32) {
        if thread_idx_x() / 32 == 1 {
            warp_sync();
        }
    }
}

fn main() {}
