//! Device memory seen from the host: raw device pointers and buffers of one rank.

mod buffer;
mod device_ptr;
mod tile_map;

pub use crate::pod::Pod;
pub use buffer::Buffer;
pub use device_ptr::{AsDevicePtr, DevicePtr};
pub(crate) use tile_map::tile_map_words;
pub use tile_map::TILE_MAP_WORDS;
