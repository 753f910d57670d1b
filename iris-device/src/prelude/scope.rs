//! Memory scopes and fences.

use super::device_only;
use core::sync::atomic::Ordering;

/// Which threads an atomic operation or fence is ordered with.
///
/// Across ranks use [`Scope::System`] (the default): peers' memory is another device's (or
/// another process's) and narrower scopes may leave the operation in a cache the peer
/// never sees. Iris users hit hangs with device scope on cross-rank flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Scope {
    /// The threads of this block (`workgroup` on AMD, `.cta` on NVIDIA).
    Block,
    /// The threads of this device (`agent` on AMD, `.gpu` on NVIDIA).
    Device,
    /// Every device and the host (`.sys` on NVIDIA, the system scope on AMD).
    #[default]
    System,
}

/// A memory fence of the given ordering over the given scope
/// (`__threadfence_system()` is `fence(Ordering::SeqCst, Scope::System)`).
#[inline(always)]
pub fn fence(order: Ordering, scope: Scope) {
    let _ = (order, scope);
    device_only("fence")
}
