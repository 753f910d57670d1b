//! What the ranks say: the hello a rank sends when it connects, and the payload of a
//! contribution to a collective.

use iris_driver::Result;

use super::super::socket::Frame;
use super::super::wire::{Reader, Writer};

/// What a rank says when it connects.
pub(super) struct Hello {
    pub(super) rank: usize,
    pub(super) world_size: usize,
    pub(super) pid: u32,
    pub(super) job_id: String,
}

impl Hello {
    pub(super) fn encode(&self) -> Vec<u8> {
        Writer::new()
            .usize(self.rank)
            .usize(self.world_size)
            .u64(u64::from(self.pid))
            .str(&self.job_id)
            .finish()
    }

    pub(super) fn decode(bytes: &[u8]) -> Result<Hello> {
        let mut r = Reader::new("hello", bytes);
        let hello = Hello {
            rank: r.usize()?,
            world_size: r.usize()?,
            pid: u32::try_from(r.u64()?).unwrap_or(u32::MAX),
            job_id: r.string()?,
        };
        r.end()?;
        Ok(hello)
    }
}

/// The payload of a contribution to `op`, or the op the rank entered instead.
pub(super) fn decode_contribution(frame: &Frame, op: &str) -> Result<Result<Vec<u8>, String>> {
    let mut r = Reader::new("contribution", &frame.payload);
    let entered = r.string()?;
    let bytes = r.bytes()?.to_vec();
    r.end()?;
    Ok(if entered == op {
        Ok(bytes)
    } else {
        Err(entered)
    })
}
