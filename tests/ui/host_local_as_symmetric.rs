// A local buffer has no peer table: it cannot be passed where the kernel takes Symmetric<T>.
use iris::prelude::*;
use iris::World;

#[iris::kernel]
pub fn push(out: Symmetric<f32>, peer: u32) {
    iris::store(out, 1.0, peer);
}

fn main() {
    let _ = World::threads(1).run(|iris| {
        let local = iris.zeros::<f32>(16)?;
        push::launch(iris, (1, 1), &local, 0)
    });
}
