//! Device peer tables: the one place that lays them out (see
//! [`iris_device::abi::peer_table`]). Every provider uploads an allocation's table with
//! [`upload`] and releases it with [`free`].
//!
//! The allocation holds the header (the owning rank, the abort word's and the fault
//! record's device addresses, the wait limit, a 16-byte sink, the world size) and then one
//! entry per rank; the address a
//! [`SymmetricAddressMap`](super::SymmetricAddressMap) keeps and kernels get is entry 0's,
//! [`HEADER_BYTES`] past the start of the allocation.

use iris_device::abi::peer_table::{
    ABORT_FLAG_INDEX, ERROR_WORD_INDEX, HEADER_BYTES, RANK_INDEX, WAIT_LIMIT_INDEX,
    WORLD_SIZE_INDEX,
};

use crate::rank::TableHeader;
use iris_driver::Result;
use iris_driver::{Device, MemoryKind};

/// Words of the header in front of entry 0.
const HEADER_WORDS: usize = (HEADER_BYTES / 8) as usize;

/// The table's words: the header (`header`'s words and the world size at the ABI's indices
/// from entry 0, the sink and the zero word zeroed), then `bases`.
fn table_words(bases: &[u64], header: TableHeader) -> Vec<u64> {
    let mut words = vec![0u64; HEADER_WORDS + bases.len()];
    let at = |index: i64| (HEADER_WORDS as i64 + index) as usize;
    words[at(RANK_INDEX)] = header.rank;
    words[at(ABORT_FLAG_INDEX)] = header.abort_flag;
    words[at(WAIT_LIMIT_INDEX)] = header.wait_limit_ns;
    words[at(ERROR_WORD_INDEX)] = header.fault_record;
    words[at(WORLD_SIZE_INDEX)] = bases.len() as u64;
    words[HEADER_WORDS..].copy_from_slice(bases);
    words
}

/// Allocates one allocation's peer table on `device` and writes it: the header (the
/// context's `header`, the world size `bases.len()`), then `bases` (rank `r`'s copy at
/// `bases[r]`, 0 for a rank this device cannot reach). Waits for no kernel: the table is
/// fresh memory, written on none of the rank's streams. Returns the device address of
/// entry 0, which kernels get; release it with [`free`].
pub(crate) fn upload(device: &dyn Device, bases: &[u64], header: TableHeader) -> Result<u64> {
    let bytes: Vec<u8> = table_words(bases, header)
        .iter()
        .flat_map(|w| w.to_ne_bytes())
        .collect();
    // `alloc` aligns to 256 bytes: the sink is 16-byte aligned.
    let start = device.alloc(bytes.len(), MemoryKind::Device)?;
    // SAFETY: `start` was just allocated with `bytes.len()` bytes; nothing uses it.
    let written = unsafe { device.write_fresh(start, &bytes) };
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
    use iris_device::abi::peer_table::SINK_INDEX;

    #[test]
    fn entry_zero_follows_the_header() {
        let header = TableHeader {
            rank: 2,
            abort_flag: 0xab0,
            wait_limit_ns: 27,
            fault_record: 0xe440,
        };
        let words = table_words(&[0x1000, 0, 0x3000], header);
        let entry0 = (HEADER_BYTES / 8) as i64;
        let at = |i: i64| words[(entry0 + i) as usize];
        assert_eq!(at(WORLD_SIZE_INDEX), 3);
        assert_eq!(at(ERROR_WORD_INDEX), 0xe440);
        assert_eq!(
            (at(RANK_INDEX), at(ABORT_FLAG_INDEX), at(WAIT_LIMIT_INDEX)),
            (2, 0xab0, 27)
        );
        assert_eq!(at(iris_device::abi::peer_table::ZERO_WORD_INDEX), 0);
        assert_eq!((at(SINK_INDEX), at(SINK_INDEX + 1)), (0, 0));
        assert_eq!(&words[entry0 as usize..], &[0x1000, 0, 0x3000]);
    }
}
