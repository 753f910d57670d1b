//! The layout of a device peer table, shared by the runtime that writes it and the
//! kernels that read it.
//!
//! A table is `u64` words in the device memory of the rank that uses it, in one
//! 16-byte aligned allocation: a header, then one entry per rank (the device address
//! of that rank's copy of the allocation, 0 for a rank that cannot be reached). The
//! address kernels get is entry 0's, so the header sits at negative indices:
//!
//! | index | holds |
//! |---|---|
//! | `-4`, `-3` | a 16-byte sink: where a checked access with a bad peer goes instead |
//! | `-2` | the device address of the context's error word |
//! | `-1` | the world size |
//! | `0 .. world` | the ranks' copies |
//!
//! A kernel built with peer checks compares the peer with `table[-1]`; on a bad peer
//! it swaps its [`encode_error`] into the error word if the word is 0 (the first error
//! wins) and accesses the sink instead (a load from it returns an unspecified value).

/// Bytes of the header in front of entry 0.
pub const HEADER_BYTES: u64 = 32;

/// Index (from entry 0, in `u64` words) of the world size.
pub const WORLD_SIZE_INDEX: i64 = -1;

/// Index of the error word's address.
pub const ERROR_WORD_INDEX: i64 = -2;

/// Index of the sink's first word.
pub const SINK_INDEX: i64 = -4;

/// Bytes of the sink: the largest element a `Symmetric<T>` may have.
pub const SINK_BYTES: u64 = 16;

/// The flag bit of an error word that holds an error.
pub const ERROR_FLAG: u64 = 1 << 63;

/// The error word a checked access with peer `peer` in a world of `world` ranks
/// writes: [`ERROR_FLAG`], the world size (31 bits) in bits 32..63, the peer's bits
/// in bits 0..32.
pub const fn encode_error(peer: u32, world: u64) -> u64 {
    ERROR_FLAG | ((world & 0x7fff_ffff) << 32) | peer as u64
}

/// The peer and the world size an error word holds; `None` for a word without
/// [`ERROR_FLAG`] (no error).
pub const fn decode_error(word: u64) -> Option<(u32, u64)> {
    if word & ERROR_FLAG == 0 {
        None
    } else {
        Some((word as u32, (word >> 32) & 0x7fff_ffff))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_words_round_trip_and_zero_is_no_error() {
        assert_eq!(decode_error(0), None);
        assert_eq!(decode_error(encode_error(4, 4)), Some((4, 4)));
        assert_eq!(decode_error(encode_error(u32::MAX, 8)), Some((u32::MAX, 8)));
        assert_ne!(encode_error(0, 0), 0, "an error is never the empty word");
    }

    #[test]
    fn the_header_holds_the_sink_and_two_words() {
        assert_eq!(HEADER_BYTES, (-SINK_INDEX) as u64 * 8);
        assert_eq!(SINK_BYTES, 16);
        assert_eq!(ERROR_WORD_INDEX, SINK_INDEX + 2);
        assert_eq!(WORLD_SIZE_INDEX, -1);
    }
}
