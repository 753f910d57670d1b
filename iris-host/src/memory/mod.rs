//! Device memory seen from the host: raw device pointers and buffers of one rank.

mod buffer;
mod device_ptr;

pub use crate::pod::Pod;
pub use buffer::Buffer;
pub use device_ptr::{AsDevicePtr, DevicePtr};
