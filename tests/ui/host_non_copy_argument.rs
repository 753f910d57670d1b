// Values passed to kernels are plain device values: a Vec is not one.
use iris::prelude::*;
use iris::World;

#[iris::kernel]
pub fn take(x: *mut u32, value: u32) {
    unsafe { *x = value };
}

fn main() {
    let _ = World::threads(1).run(|iris| {
        let buf = iris.zeros::<u32>(1)?;
        let values = vec![1u32, 2, 3];
        take::launch(iris, (1, 1), &buf, values)
    });
}
