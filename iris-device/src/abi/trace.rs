//! The trace buffer that `trace_event(id, value)` writes: one per traced rank, in its
//! device memory, read by the host when the rank's trace ends.
//!
//! A kernel whose unit records trace events (built with the `trace-events` feature) takes
//! [`HIDDEN_SLOTS`] argument slots after its parameters' slots: the buffer's device
//! address (0 when the run is not traced: the event is then skipped) and the launch's
//! serial in the rank's trace (which launch made an event).
//!
//! The buffer, in `u64` words:
//!
//! | words | what |
//! |---|---|
//! | 0 | `block_mask`: block rings - 1 (a power of two less one) |
//! | 1 | `event_mask`: events a block ring keeps - 1 (a power of two less one) |
//! | 2 .. 2 + rings | each ring's count of events ever written |
//! | then | `rings x events` records of [`RECORD_WORDS`] words |
//!
//! Block `b` (its linear index in the grid) writes ring `b & block_mask`: it takes the
//! ring's next count `n` with an atomic add and writes record `n & event_mask` of the
//! ring, so a ring keeps its latest `event_mask + 1` events. A record:
//!
//! | word | what |
//! |---|---|
//! | 0 | the device clock (`global_timer_ns`) |
//! | 1 | the value |
//! | 2 | the id (low 32 bits), the launch serial (high 32) |
//! | 3 | the block's linear index (low 32 bits), the thread's within the block (high 32) |

/// Argument slots a tracing kernel takes after its parameters' slots.
pub const HIDDEN_SLOTS: usize = 2;

/// Words before the rings' counts.
pub const HEADER_WORDS: u64 = 2;

/// Words of one record.
pub const RECORD_WORDS: u64 = 4;

/// Bytes of a buffer with `rings` block rings of `events` records each (both powers of
/// two).
pub const fn buffer_bytes(rings: u64, events: u64) -> u64 {
    (HEADER_WORDS + rings + rings * events * RECORD_WORDS) * 8
}

/// The word where record `index` of ring `ring` starts, in a buffer of `rings` rings of
/// `events` records.
pub const fn record_word(rings: u64, events: u64, ring: u64, index: u64) -> u64 {
    HEADER_WORDS + rings + (ring * events + index) * RECORD_WORDS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_follow_the_counts() {
        assert_eq!(record_word(4, 8, 0, 0), 2 + 4);
        assert_eq!(record_word(4, 8, 1, 0), 2 + 4 + 8 * 4);
        assert_eq!(buffer_bytes(4, 8), (2 + 4 + 4 * 8 * 4) * 8);
        assert_eq!(
            record_word(4, 8, 3, 7) + RECORD_WORDS,
            buffer_bytes(4, 8) / 8
        );
    }
}
