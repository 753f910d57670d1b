use iris::prelude::*;

// An asynchronous copy moves 4, 8 or 16 bytes.
#[iris::kernel]
pub fn twelve_bytes(dst: *mut [f32; 3], src: *const [f32; 3]) {
    copy_async(dst, src);
}

// How many groups may stay in flight is a literal (the instruction takes an immediate).
#[iris::kernel]
pub fn variable_wait(dst: *mut [f32; 4], src: *const [f32; 4], n: u32) {
    copy_async(dst, src);
    copy_async_commit();
    copy_async_wait(n);
}

fn main() {}
