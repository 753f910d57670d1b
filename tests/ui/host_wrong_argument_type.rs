// Kernel arguments are typed: a u32 is not a u64, an f64 buffer is not an f32 pointer.
use iris::prelude::*;
use iris::World;

#[iris::kernel]
pub fn fill(x: *mut f32, value: f32, n: u64) {
    let i = thread_idx_x() as u64;
    if i < n {
        unsafe { *x.add(i as usize) = value };
    }
}

fn main() {
    let _ = World::threads(1).run(|iris| {
        let buf = iris.zeros::<f64>(16)?;
        let n: u32 = 16;
        fill::launch(iris, (1, 32), &buf, 1.0, n)
    });
}
