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
//! | `-8` | the rank whose table this is (the rank that launches kernels with it) |
//! | `-7` | the address of the world's abort flag (a `u64` the device can read: not 0 once the world has failed) |
//! | `-6` | the wait limit in nanoseconds: how long a device-side signal wait may take |
//! | `-5` | 0, always: what `world_aborted` reads through a table that names no abort flag |
//! | `-4`, `-3` | a 16-byte sink: where a checked access with a bad peer goes instead |
//! | `-2` | the device address of the context's fault record (its first word is the error word) |
//! | `-1` | the world size |
//! | `0 .. world` | the ranks' copies |
//!
//! A kernel built with peer checks compares the peer with `table[-1]`; on a bad peer
//! it swaps its [`encode_error`] into the error word if the word is 0 (the first error
//! wins) and accesses the sink instead (a load from it returns an unspecified value).
//!
//! A signal wait (`signal_wait_until`) that gives up (its wait limit passed, or the
//! world's abort flag was raised) swaps [`encode_wait_fault`] into the error word if it
//! is 0 and, if it won, writes what it waited for into the rest of the fault record
//! ([`FAULT_RECORD_WORDS`] words, laid out by the `FAULT_*` indices); the host reads the
//! record after the kernel and reports it.

/// Bytes of the header in front of entry 0.
pub const HEADER_BYTES: u64 = 64;

/// Index of the rank that owns the table.
pub const RANK_INDEX: i64 = -8;

/// Index of the abort flag's address.
pub const ABORT_FLAG_INDEX: i64 = -7;

/// Index of the wait limit in nanoseconds.
pub const WAIT_LIMIT_INDEX: i64 = -6;

/// Index of a word that is always 0.
pub const ZERO_WORD_INDEX: i64 = -5;

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

/// The bit (with [`ERROR_FLAG`]) of an error word written by a signal wait that gave up.
pub const WAIT_FAULT: u64 = 1 << 62;

/// Words of a context's fault record: the error word, then what a wait that gave up
/// waited for.
pub const FAULT_RECORD_WORDS: usize = 8;

/// Record word: the device address of the signal the wait polled.
pub const FAULT_SIGNAL: usize = 1;
/// Record word: the signal's value when the wait gave up.
pub const FAULT_SEEN: usize = 2;
/// Record word: the value the wait compared with.
pub const FAULT_EXPECTED: usize = 3;
/// Record word: the comparison ([`WaitCmp`] as a number).
pub const FAULT_CMP: usize = 4;
/// Record word: nanoseconds the wait took.
pub const FAULT_WAITED: usize = 5;
/// Record word: the waiting thread, `block_idx_x | thread_idx_x << 32`.
pub const FAULT_THREAD: usize = 6;

/// Why a wait gave up (bits 0..8 of its error word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitFault {
    /// The wait limit passed.
    TimedOut = 1,
    /// The world's abort flag was raised (another rank failed).
    Aborted = 2,
}

/// The comparisons of `signal_wait_until`, as the device encodes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitCmp {
    /// `==`.
    Eq = 0,
    /// `!=`.
    Ne = 1,
    /// `>=`.
    Ge = 2,
    /// `>`.
    Gt = 3,
    /// `<=`.
    Le = 4,
    /// `<`.
    Lt = 5,
}

impl WaitCmp {
    /// The comparison encoded as `code`.
    pub const fn from_code(code: u64) -> Option<WaitCmp> {
        Some(match code {
            0 => WaitCmp::Eq,
            1 => WaitCmp::Ne,
            2 => WaitCmp::Ge,
            3 => WaitCmp::Gt,
            4 => WaitCmp::Le,
            5 => WaitCmp::Lt,
            _ => return None,
        })
    }

    /// The operator, for messages (`>=`).
    pub const fn symbol(self) -> &'static str {
        match self {
            WaitCmp::Eq => "==",
            WaitCmp::Ne => "!=",
            WaitCmp::Ge => ">=",
            WaitCmp::Gt => ">",
            WaitCmp::Le => "<=",
            WaitCmp::Lt => "<",
        }
    }
}

/// The error word a checked access with peer `peer` in a world of `world` ranks
/// writes: [`ERROR_FLAG`], the world size (30 bits) in bits 32..62, the peer's bits
/// in bits 0..32.
pub const fn encode_error(peer: u32, world: u64) -> u64 {
    ERROR_FLAG | ((world & 0x3fff_ffff) << 32) | peer as u64
}

/// The error word of a signal wait that gave up for `why`.
pub const fn encode_wait_fault(why: WaitFault) -> u64 {
    ERROR_FLAG | WAIT_FAULT | why as u64
}

/// The peer and the world size an error word of a checked access holds; `None` for a
/// word without [`ERROR_FLAG`] (no error) or one a wait wrote.
pub const fn decode_error(word: u64) -> Option<(u32, u64)> {
    if word & ERROR_FLAG == 0 || word & WAIT_FAULT != 0 {
        None
    } else {
        Some((word as u32, (word >> 32) & 0x3fff_ffff))
    }
}

/// Why a wait gave up, from an error word a wait wrote; `None` for any other word.
pub const fn decode_wait_fault(word: u64) -> Option<WaitFault> {
    if word & ERROR_FLAG == 0 || word & WAIT_FAULT == 0 {
        return None;
    }
    match word & 0xff {
        1 => Some(WaitFault::TimedOut),
        2 => Some(WaitFault::Aborted),
        _ => None,
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
        assert_eq!(decode_error(encode_wait_fault(WaitFault::Aborted)), None);
        assert_eq!(
            decode_wait_fault(encode_wait_fault(WaitFault::TimedOut)),
            Some(WaitFault::TimedOut)
        );
        assert_eq!(decode_wait_fault(encode_error(2, 8)), None);
        for code in 0..6 {
            assert_eq!(WaitCmp::from_code(code).map(|c| c as u64), Some(code));
        }
    }

    #[test]
    fn the_header_holds_the_sink_and_six_words() {
        assert_eq!(HEADER_BYTES, (-RANK_INDEX) as u64 * 8);
        assert_eq!(HEADER_BYTES % 16, 0, "entry 0 stays 16-byte aligned");
        assert_eq!((ABORT_FLAG_INDEX, WAIT_LIMIT_INDEX), (-7, -6));
        assert_eq!(SINK_BYTES, 16);
        assert_eq!(ERROR_WORD_INDEX, SINK_INDEX + 2);
        assert_eq!(WORLD_SIZE_INDEX, -1);
    }
}
