//! Device peer tables: the one place that lays them out (see
//! [`iris_device::abi::peer_table`]). Every provider uploads an allocation's table with
//! [`upload`] and releases it with [`free`].
//!
//! The allocation holds the header (a 16-byte sink, the device address of the context's
//! error word, the world size) and then one entry per rank; the address a
//! [`SymmetricAddressMap`](super::SymmetricAddressMap) keeps and kernels get is entry 0's,
//! [`HEADER_BYTES`] past the start of the allocation.

use std::time::Duration;

use iris_device::abi::peer_table::{ERROR_WORD_INDEX, HEADER_BYTES, WORLD_SIZE_INDEX};

use iris_driver::Result;
use iris_driver::{Device, MemoryKind, Stream};

/// Words of the header in front of entry 0.
const HEADER_WORDS: usize = (HEADER_BYTES / 8) as usize;

/// The table's words: the header (the sink zeroed, the error word's address and the world
/// size at the ABI's indices from entry 0), then `bases`.
fn table_words(bases: &[u64], error_word: u64) -> Vec<u64> {
    let mut words = vec![0u64; HEADER_WORDS + bases.len()];
    let at = |index: i64| (HEADER_WORDS as i64 + index) as usize;
    words[at(ERROR_WORD_INDEX)] = error_word;
    words[at(WORLD_SIZE_INDEX)] = bases.len() as u64;
    words[HEADER_WORDS..].copy_from_slice(bases);
    words
}

/// Allocates one allocation's peer table on `device` and writes it: the header, whose
/// world size is `bases.len()` and whose error word is at device address `error_word`
/// (the context's), then `bases` (rank `r`'s copy at `bases[r]`, 0 for a rank this device
/// cannot reach). Waits for `stream`'s queued work first (at most `timeout`), then copies
/// on it. Returns the device address of entry 0, which kernels get; release it with
/// [`free`].
pub(crate) fn upload(
    device: &dyn Device,
    stream: &dyn Stream,
    timeout: Duration,
    bases: &[u64],
    error_word: u64,
) -> Result<u64> {
    let bytes: Vec<u8> = table_words(bases, error_word)
        .iter()
        .flat_map(|w| w.to_ne_bytes())
        .collect();
    // `alloc` aligns to 256 bytes: the sink is 16-byte aligned.
    let start = device.alloc(bytes.len(), MemoryKind::Device)?;
    let written = stream.synchronize(timeout).and_then(|()| {
        // SAFETY: `start` was just allocated with `bytes.len()` bytes.
        unsafe { device.memcpy_htod(stream, start, &bytes) }
    });
    if let Err(err) = written {
        // SAFETY: nothing has seen `start`.
        let _ = unsafe { device.free(start) };
        return Err(err);
    }
    Ok(start + HEADER_BYTES)
}

/// Releases a table made by [`upload`], given the address it returned (entry 0's).
///
/// # Safety
/// `table` came from [`upload`] on `device` and no queued or running kernel uses it.
pub(crate) unsafe fn free(device: &dyn Device, table: u64) -> Result<()> {
    // SAFETY: the allocation starts `HEADER_BYTES` before entry 0 (the caller's promise
    // that `table` came from `upload`).
    unsafe { device.free(table - HEADER_BYTES) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iris_device::abi::peer_table::{ERROR_WORD_INDEX, SINK_INDEX, WORLD_SIZE_INDEX};

    #[test]
    fn entry_zero_follows_the_header() {
        let words = table_words(&[0x1000, 0, 0x3000], 0xe440);
        let entry0 = (HEADER_BYTES / 8) as i64;
        let at = |i: i64| words[(entry0 + i) as usize];
        assert_eq!(at(WORLD_SIZE_INDEX), 3);
        assert_eq!(at(ERROR_WORD_INDEX), 0xe440);
        assert_eq!((at(SINK_INDEX), at(SINK_INDEX + 1)), (0, 0));
        assert_eq!(&words[entry0 as usize..], &[0x1000, 0, 0x3000]);
    }
}
