// A symmetric buffer is not a local pointer argument: pass `buf.local_ptr()` to mean that.
use iris::prelude::*;
use iris::World;

#[iris::kernel]
pub fn scale(x: *mut f32, n: u64) {
    let i = thread_idx_x() as u64;
    if i < n {
        unsafe { *x.add(i as usize) = 2.0 * *x.add(i as usize) };
    }
}

fn main() {
    let _ = World::threads(1).run(|iris| {
        let sym = iris.symmetric_zeros::<f32>(16)?;
        scale::launch(iris, (1, 32), &sym, 16)
    });
}
