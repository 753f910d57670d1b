//! `LaunchConfig`: grid and block of one launch.

/// Blocks per grid and threads per block, x y z.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    /// Blocks per grid.
    pub grid: [u32; 3],
    /// Threads per block.
    pub block: [u32; 3],
}

impl LaunchConfig {
    /// A launch of `grid` blocks of `block` threads.
    pub fn new(grid: [u32; 3], block: [u32; 3]) -> Self {
        Self { grid, block }
    }

    /// A 1-D launch of `grid` blocks of `block` threads.
    pub fn linear(grid: u32, block: u32) -> Self {
        Self::new([grid, 1, 1], [block, 1, 1])
    }

    /// Enough 1-D blocks of `block` threads to cover `n` threads (at least one block).
    pub fn for_elements(n: u64, block: u32) -> Self {
        let blocks = n.div_ceil(u64::from(block.max(1))).max(1);
        Self::linear(u32::try_from(blocks).unwrap_or(u32::MAX), block)
    }

    /// Threads per block.
    pub fn block_threads(&self) -> u64 {
        self.block.iter().map(|&d| u64::from(d)).product()
    }
}

impl From<(u32, u32)> for LaunchConfig {
    /// `(grid, block)`, both 1-D.
    fn from((grid, block): (u32, u32)) -> Self {
        Self::linear(grid, block)
    }
}

impl From<([u32; 3], [u32; 3])> for LaunchConfig {
    /// `(grid, block)`.
    fn from((grid, block): ([u32; 3], [u32; 3])) -> Self {
        Self::new(grid, block)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        assert_eq!(
            LaunchConfig::from((4, 64)),
            LaunchConfig::new([4, 1, 1], [64, 1, 1])
        );
        assert_eq!(LaunchConfig::for_elements(1000, 256).grid, [4, 1, 1]);
        assert_eq!(LaunchConfig::for_elements(0, 256).grid, [1, 1, 1]);
        assert_eq!(LaunchConfig::new([1; 3], [8, 4, 2]).block_threads(), 64);
    }
}
