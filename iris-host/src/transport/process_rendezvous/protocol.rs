//! What the ranks say: the hello a rank sends when it connects, the welcome the hub
//! answers once every rank has arrived (every rank's host and process), and the payload
//! of a contribution to a collective.

use iris_driver::Result;

use super::super::nodes::NodeClaim;
use super::super::socket::Frame;
use super::super::wire::{Reader, Writer};

/// What a rank says when it connects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Hello {
    pub(super) rank: usize,
    pub(super) world_size: usize,
    pub(super) pid: u32,
    pub(super) job_id: String,
    /// The node it runs on ([`hostname`](super::super::nodes::hostname)).
    pub(super) host: String,
    /// What its launcher says about its node (checked by the hub of a network
    /// rendezvous).
    pub(super) claim: NodeClaim,
}

fn put_option(w: &mut Writer, v: Option<usize>) {
    match v {
        Some(v) => w.u8(1).usize(v),
        None => w.u8(0),
    };
}

fn get_option(r: &mut Reader<'_>) -> Result<Option<usize>> {
    Ok(match r.u8()? {
        0 => None,
        _ => Some(r.usize()?),
    })
}

impl Hello {
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.usize(self.rank)
            .usize(self.world_size)
            .u64(u64::from(self.pid))
            .str(&self.job_id)
            .str(&self.host);
        put_option(&mut w, self.claim.local_rank);
        put_option(&mut w, self.claim.local_world_size);
        w.finish()
    }

    pub(super) fn decode(bytes: &[u8]) -> Result<Hello> {
        let mut r = Reader::new("hello", bytes);
        let hello = Hello {
            rank: r.usize()?,
            world_size: r.usize()?,
            pid: u32::try_from(r.u64()?).unwrap_or(u32::MAX),
            job_id: r.string()?,
            host: r.string()?,
            claim: NodeClaim {
                local_rank: get_option(&mut r)?,
                local_world_size: get_option(&mut r)?,
            },
        };
        r.end()?;
        Ok(hello)
    }
}

/// Every rank's host and process id, by rank.
pub(super) type RankList = Vec<(String, u32)>;

/// Every rank's host and process id, by rank: the hub's welcome.
pub(super) fn encode_welcome(ranks: &[(String, u32)]) -> Vec<u8> {
    let mut w = Writer::new();
    w.usize(ranks.len());
    for (host, pid) in ranks {
        w.str(host).u64(u64::from(*pid));
    }
    w.finish()
}

/// What [`encode_welcome`] wrote, checked against the world size.
pub(super) fn decode_welcome(bytes: &[u8], world_size: usize) -> Result<RankList> {
    let mut r = Reader::new("welcome", bytes);
    let n = r.usize()?;
    if n != world_size {
        return Err(iris_driver::Error::Protocol {
            what: "welcome".into(),
            reason: format!("{n} ranks listed in a world of {world_size}"),
        });
    }
    let ranks = (0..n)
        .map(|_| Ok((r.string()?, u32::try_from(r.u64()?).unwrap_or(u32::MAX))))
        .collect::<Result<Vec<_>>>()?;
    r.end()?;
    Ok(ranks)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hellos_and_welcomes_round_trip() {
        let hello = Hello {
            rank: 3,
            world_size: 4,
            pid: 1234,
            job_id: "job".into(),
            host: "node-b".into(),
            claim: NodeClaim {
                local_rank: Some(1),
                local_world_size: None,
            },
        };
        let bytes = hello.encode();
        assert_eq!(Hello::decode(&bytes).unwrap(), hello);
        assert!(Hello::decode(&bytes[..bytes.len() - 1]).is_err());
        let ranks = vec![("node-a".to_string(), 7), ("node-b".to_string(), 8)];
        let bytes = encode_welcome(&ranks);
        assert_eq!(decode_welcome(&bytes, 2).unwrap(), ranks);
        let err = decode_welcome(&bytes, 3).unwrap_err();
        assert!(
            err.to_string().contains("2 ranks listed in a world of 3"),
            "{err}"
        );
    }
}
