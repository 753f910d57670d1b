//! Which ranks of a job share a node: every rank names its host when it joins the
//! network rendezvous, and the ranks that name the same host are one node. Nodes are
//! numbered by their lowest rank (rank 0's node is node 0); a rank's local rank is its
//! index among its node's ranks, in rank order (what torchrun, `iris-run --nnodes` and
//! Slurm's block distribution give). A launcher's `LOCAL_RANK` and `LOCAL_WORLD_SIZE`,
//! when given, must agree with what the hosts say.

use std::fmt;

/// The variable that overrides the host name a rank reports (by default the system's
/// host name): ranks of one machine that set different values count as different
/// nodes (for tests of several nodes on one machine).
pub const IRIS_HOSTNAME: &str = "IRIS_HOSTNAME";

/// The name of this process's node: `IRIS_HOSTNAME` when set, else the system's host
/// name (`localhost` if it cannot be read).
pub fn hostname() -> String {
    if let Some(name) = std::env::var(IRIS_HOSTNAME)
        .ok()
        .filter(|n| !n.trim().is_empty())
    {
        return name.trim().to_string();
    }
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its length; gethostname writes at most that.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match (rc, std::str::from_utf8(&buf[..len])) {
        (0, Ok(name)) if !name.is_empty() => name.to_string(),
        _ => "localhost".to_string(),
    }
}

/// What a rank's launcher says about its node (each `None` when it says nothing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeClaim {
    /// Its `LOCAL_RANK` (or the launcher's equivalent).
    pub local_rank: Option<usize>,
    /// Its `LOCAL_WORLD_SIZE` (or the launcher's equivalent).
    pub local_world_size: Option<usize>,
}

/// The nodes of a job, from the host every rank named.
#[derive(Clone, PartialEq, Eq)]
pub struct NodeLayout {
    /// The node of each rank.
    node_of: Vec<usize>,
    /// The ranks of each node, in rank order.
    ranks: Vec<Vec<usize>>,
    /// The host of each node.
    hosts: Vec<String>,
}

impl NodeLayout {
    /// The layout of a job whose rank `r` runs on host `hosts[r]`.
    pub fn from_hosts(hosts: &[String]) -> NodeLayout {
        let mut layout = NodeLayout {
            node_of: Vec::with_capacity(hosts.len()),
            ranks: Vec::new(),
            hosts: Vec::new(),
        };
        for (rank, host) in hosts.iter().enumerate() {
            let node = match layout.hosts.iter().position(|h| h == host) {
                Some(node) => node,
                None => {
                    layout.hosts.push(host.clone());
                    layout.ranks.push(Vec::new());
                    layout.hosts.len() - 1
                }
            };
            layout.node_of.push(node);
            layout.ranks[node].push(rank);
        }
        layout
    }

    /// How many ranks the job has.
    pub fn world_size(&self) -> usize {
        self.node_of.len()
    }

    /// How many nodes the job spans.
    pub fn node_count(&self) -> usize {
        self.ranks.len()
    }

    /// The node rank `rank` runs on (0 for a rank outside the job).
    pub fn node_of(&self, rank: usize) -> usize {
        self.node_of.get(rank).copied().unwrap_or(0)
    }

    /// The ranks of node `node`, in rank order (empty for a node outside the job).
    pub fn ranks_on(&self, node: usize) -> &[usize] {
        self.ranks.get(node).map_or(&[], Vec::as_slice)
    }

    /// The host of node `node`.
    pub fn host(&self, node: usize) -> &str {
        self.hosts.get(node).map_or("", String::as_str)
    }

    /// Rank `rank`'s index among the ranks of its node.
    pub fn local_rank(&self, rank: usize) -> usize {
        self.ranks_on(self.node_of(rank))
            .iter()
            .position(|&r| r == rank)
            .unwrap_or(0)
    }

    /// Whether ranks `a` and `b` share a node.
    pub fn same_node(&self, a: usize, b: usize) -> bool {
        self.node_of(a) == self.node_of(b)
    }

    /// Checks what each rank's launcher said (`claims[rank]`) against the hosts; the
    /// first disagreement, in words.
    pub fn check_claims(&self, claims: &[NodeClaim]) -> Result<(), String> {
        for (rank, claim) in claims.iter().enumerate() {
            let node = self.node_of(rank);
            let (local, size) = (self.local_rank(rank), self.ranks_on(node).len());
            let on = || {
                format!(
                    "host {:?} runs rank(s) {:?} of the job",
                    self.host(node),
                    self.ranks_on(node)
                )
            };
            if let Some(claimed) = claim.local_world_size.filter(|&c| c != size) {
                return Err(format!(
                    "rank {rank} was told its node runs {claimed} rank(s) (LOCAL_WORLD_SIZE), but {}",
                    on()
                ));
            }
            if let Some(claimed) = claim.local_rank.filter(|&c| c != local) {
                return Err(format!(
                    "rank {rank} was told it is local rank {claimed} (LOCAL_RANK), but {}, so it is local rank {local}",
                    on()
                ));
            }
        }
        Ok(())
    }
}

impl fmt::Debug for NodeLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.hosts.iter().zip(&self.ranks))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn ranks_naming_one_host_are_one_node() {
        let layout = NodeLayout::from_hosts(&hosts(&["b", "b", "a", "a", "b"]));
        assert_eq!(layout.node_count(), 2);
        assert_eq!(layout.world_size(), 5);
        assert_eq!(layout.ranks_on(0), &[0, 1, 4]);
        assert_eq!(layout.ranks_on(1), &[2, 3]);
        assert_eq!((layout.host(0), layout.host(1)), ("b", "a"));
        assert_eq!(
            (0..5).map(|r| layout.local_rank(r)).collect::<Vec<_>>(),
            vec![0, 1, 0, 1, 2]
        );
        assert!(layout.same_node(0, 4) && !layout.same_node(1, 2));
        assert_eq!(layout.ranks_on(7), &[] as &[usize]);
        assert_eq!(format!("{layout:?}"), r#"{"b": [0, 1, 4], "a": [2, 3]}"#);
        let one = NodeLayout::from_hosts(&hosts(&["x", "x"]));
        assert_eq!((one.node_count(), one.local_rank(1)), (1, 1));
    }

    #[test]
    fn launcher_claims_must_match_the_hosts() {
        let layout = NodeLayout::from_hosts(&hosts(&["a", "a", "b", "b"]));
        let claim = |local_rank, local_world_size| NodeClaim {
            local_rank,
            local_world_size,
        };
        let good: Vec<NodeClaim> = (0..4).map(|r| claim(Some(r % 2), Some(2))).collect();
        layout.check_claims(&good).unwrap();
        layout.check_claims(&[NodeClaim::default(); 4]).unwrap();
        let mut bad = good.clone();
        bad[3] = claim(Some(0), Some(2));
        let err = layout.check_claims(&bad).unwrap_err();
        assert!(
            err.contains("rank 3 was told it is local rank 0")
                && err.contains(r#"host "b" runs rank(s) [2, 3]"#),
            "{err}"
        );
        let mut bad = good;
        bad[2] = claim(Some(0), Some(4));
        let err = layout.check_claims(&bad).unwrap_err();
        assert!(err.contains("runs 4 rank(s) (LOCAL_WORLD_SIZE)"), "{err}");
    }
}
