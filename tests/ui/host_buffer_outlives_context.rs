// A buffer cannot outlive the rank context it was allocated from.
use iris::World;

fn main() {
    let buffers = World::threads(1).run(|iris| iris.zeros::<f32>(16));
    drop(buffers);
}
