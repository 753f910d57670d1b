#[iris::kernel]
pub struct NotAKernel {
    x: u32,
}

fn main() {}
