//! The sub-allocator of a symmetric heap: first fit over a free list kept in offset
//! order, coalescing neighbours on free. Deterministic: ranks that make the same calls in
//! the same order get the same offsets.

use std::collections::{BTreeMap, HashMap};

/// Every range starts at a multiple of this and spans a multiple of it.
pub const HEAP_ALIGN: usize = 256;

/// Why an allocator call failed (the symmetric provider adds the rank).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeapError {
    /// No free range is large enough.
    Exhausted {
        /// Bytes asked for, rounded up to [`HEAP_ALIGN`].
        requested: usize,
        /// Free bytes.
        free: usize,
        /// The largest free range.
        largest: usize,
        /// The heap's size.
        heap: usize,
    },
    /// The offset is not the start of a live range.
    InvalidFree {
        /// The offset.
        offset: usize,
        /// Why.
        reason: &'static str,
    },
    /// An alignment that is not a power of two.
    BadAlignment(usize),
}

/// A first-fit allocator over `0..size`.
#[derive(Clone, Debug)]
pub struct HeapAllocator {
    size: usize,
    /// Free ranges: offset -> length. Never two adjacent ones (they are coalesced).
    free: BTreeMap<usize, usize>,
    /// Live ranges: offset -> length.
    live: HashMap<usize, usize>,
    free_bytes: usize,
}

impl HeapAllocator {
    /// An allocator over `size` bytes (rounded down to [`HEAP_ALIGN`]), all free.
    pub fn new(size: usize) -> Self {
        let size = size / HEAP_ALIGN * HEAP_ALIGN;
        let mut free = BTreeMap::new();
        if size > 0 {
            free.insert(0, size);
        }
        Self {
            size,
            free,
            live: HashMap::new(),
            free_bytes: size,
        }
    }

    /// Allocates `bytes` (at least one granule), aligned to `align` and to [`HEAP_ALIGN`];
    /// returns the offset.
    pub fn alloc(&mut self, bytes: usize, align: usize) -> Result<usize, HeapError> {
        if !align.is_power_of_two() {
            return Err(HeapError::BadAlignment(align));
        }
        let align = align.max(HEAP_ALIGN);
        let exhausted = |this: &Self, requested| HeapError::Exhausted {
            requested,
            free: this.free_bytes,
            largest: this.largest_free(),
            heap: this.size,
        };
        let Some(len) = bytes.max(1).checked_next_multiple_of(HEAP_ALIGN) else {
            return Err(exhausted(self, bytes));
        };
        let found = self.free.iter().find_map(|(&start, &range)| {
            let aligned = start.checked_next_multiple_of(align)?;
            let end = aligned.checked_add(len)?;
            (end <= start + range).then_some((start, range, aligned, end))
        });
        let Some((start, range, aligned, end)) = found else {
            return Err(exhausted(self, len));
        };
        self.free.remove(&start);
        if aligned > start {
            self.free.insert(start, aligned - start);
        }
        if end < start + range {
            self.free.insert(end, start + range - end);
        }
        self.live.insert(aligned, len);
        self.free_bytes -= len;
        Ok(aligned)
    }

    /// Returns the range at `offset` to the free list, merging it with free neighbours.
    pub fn free(&mut self, offset: usize) -> Result<(), HeapError> {
        let Some(len) = self.live.remove(&offset) else {
            let reason = if self
                .free
                .range(..=offset)
                .next_back()
                .is_some_and(|(&s, &l)| offset < s + l)
            {
                "the range is already free (double free)"
            } else {
                "no allocation starts at this offset"
            };
            return Err(HeapError::InvalidFree { offset, reason });
        };
        self.free_bytes += len;
        let mut start = offset;
        let mut range = len;
        if let Some((&prev, &prev_len)) = self.free.range(..offset).next_back() {
            if prev + prev_len == offset {
                self.free.remove(&prev);
                start = prev;
                range += prev_len;
            }
        }
        if let Some(next_len) = self.free.remove(&(offset + len)) {
            range += next_len;
        }
        self.free.insert(start, range);
        Ok(())
    }

    /// The heap's size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Free bytes.
    pub fn free_bytes(&self) -> usize {
        self.free_bytes
    }

    /// The largest free range.
    pub fn largest_free(&self) -> usize {
        self.free.values().copied().max().unwrap_or(0)
    }

    /// How many free ranges there are (1 when nothing is allocated: no fragmentation).
    pub fn free_ranges(&self) -> usize {
        self.free.len()
    }

    /// How many ranges are allocated.
    pub fn live_ranges(&self) -> usize {
        self.live.len()
    }

    /// The length of the live range at `offset`.
    pub fn len_of(&self, offset: usize) -> Option<usize> {
        self.live.get(&offset).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn reuses_freed_ranges_first_fit() {
        let mut h = HeapAllocator::new(4096);
        let a = h.alloc(100, 1).unwrap();
        let b = h.alloc(256, 1).unwrap();
        let c = h.alloc(512, 1).unwrap();
        assert_eq!((a, b, c), (0, 256, 512));
        h.free(b).unwrap();
        assert_eq!(h.alloc(10, 1).unwrap(), 256, "first fit reuses the hole");
        h.free(a).unwrap();
        assert_eq!(h.alloc(300, 1).unwrap(), 1024, "the hole at 0 is too small");
        assert_eq!(h.alloc(256, 1).unwrap(), 0);
    }

    #[test]
    fn coalesces_neighbours() {
        let mut h = HeapAllocator::new(4 * 256);
        let offs: Vec<usize> = (0..4).map(|_| h.alloc(256, 1).unwrap()).collect();
        assert!(h.alloc(1, 1).is_err());
        // free 1 and 3, then 2: 1..4 must become one range
        h.free(offs[1]).unwrap();
        h.free(offs[3]).unwrap();
        assert_eq!(h.free_ranges(), 2);
        h.free(offs[2]).unwrap();
        assert_eq!(h.free_ranges(), 1);
        assert_eq!(h.alloc(3 * 256, 1).unwrap(), 256);
        h.free(256).unwrap();
        h.free(0).unwrap();
        assert_eq!(h.free_ranges(), 1);
        assert_eq!(h.largest_free(), 1024);
    }

    #[test]
    fn aligns_offsets_and_keeps_padding_free() {
        let mut h = HeapAllocator::new(1 << 16);
        let a = h.alloc(1, 1).unwrap();
        assert_eq!(a, 0);
        let b = h.alloc(1, 4096).unwrap();
        assert_eq!(b, 4096);
        let c = h.alloc(1, 1).unwrap();
        assert_eq!(c, 256, "the padding before the aligned range stays usable");
        assert!(matches!(h.alloc(1, 3), Err(HeapError::BadAlignment(3))));
        for _ in 0..50 {
            let o = h.alloc(77, 512).unwrap();
            assert_eq!(o % 512, 0);
        }
    }

    #[test]
    fn exhaustion_is_an_error_with_numbers() {
        let mut h = HeapAllocator::new(1024);
        h.alloc(512, 1).unwrap();
        let err = h.alloc(1000, 1).unwrap_err();
        assert_eq!(
            err,
            HeapError::Exhausted {
                requested: 1024,
                free: 512,
                largest: 512,
                heap: 1024
            }
        );
        assert!(matches!(
            h.alloc(usize::MAX, 1),
            Err(HeapError::Exhausted { .. })
        ));
        assert!(matches!(
            HeapAllocator::new(0).alloc(1, 1),
            Err(HeapError::Exhausted { .. })
        ));
    }

    #[test]
    fn double_free_and_stray_free_are_errors() {
        let mut h = HeapAllocator::new(4096);
        let a = h.alloc(256, 1).unwrap();
        let _b = h.alloc(256, 1).unwrap();
        h.free(a).unwrap();
        assert!(matches!(
            h.free(a),
            Err(HeapError::InvalidFree { reason, .. }) if reason.contains("double free")
        ));
        assert!(matches!(h.free(100), Err(HeapError::InvalidFree { .. })));
        assert!(matches!(
            h.free(1 << 20),
            Err(HeapError::InvalidFree { .. })
        ));
    }

    #[test]
    fn no_fragmentation_leak_over_100k_cycles() {
        let heap = 1 << 24;
        let mut h = HeapAllocator::new(heap);
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut live: Vec<(usize, usize)> = Vec::new();
        for _ in 0..100_000 {
            if live.len() < 64 && (live.is_empty() || rng.random_bool(0.55)) {
                let bytes = rng.random_range(1..=64 * 1024);
                let align = 1 << rng.random_range(0..13);
                let off = h.alloc(bytes, align).unwrap();
                assert_eq!(off % align.max(HEAP_ALIGN), 0);
                // no overlap with a live range
                let len = h.len_of(off).unwrap();
                for &(o, l) in &live {
                    assert!(off + len <= o || o + l <= off, "overlap");
                }
                live.push((off, len));
            } else {
                let i = rng.random_range(0..live.len());
                let (off, _) = live.swap_remove(i);
                h.free(off).unwrap();
            }
            assert_eq!(
                h.free_bytes() + live.iter().map(|&(_, l)| l).sum::<usize>(),
                heap
            );
        }
        for (off, _) in live.drain(..) {
            h.free(off).unwrap();
        }
        assert_eq!(h.free_ranges(), 1, "everything coalesced back");
        assert_eq!(h.largest_free(), heap);
        assert_eq!(h.live_ranges(), 0);
        assert_eq!(h.alloc(heap, 1).unwrap(), 0);
    }
}
