//! Rank discovery: which rank of which job this process is, from the variables its
//! launcher set. A pure function over an environment map, so every launcher's conventions
//! are tested without setting process-wide variables.
//!
//! | launcher | rank | world size | local rank | local world size | job id |
//! |---|---|---|---|---|---|
//! | `iris-run` | `IRIS_RANK` | `IRIS_WORLD_SIZE` | `IRIS_LOCAL_RANK` | `IRIS_LOCAL_WORLD_SIZE` | `IRIS_JOB_ID` |
//! | torchrun | `RANK` | `WORLD_SIZE` | `LOCAL_RANK` | `LOCAL_WORLD_SIZE` | `TORCHELASTIC_RUN_ID`, `MASTER_ADDR`, `MASTER_PORT`, `TORCHELASTIC_RESTART_COUNT` |
//! | Open MPI | `OMPI_COMM_WORLD_RANK` | `OMPI_COMM_WORLD_SIZE` | `OMPI_COMM_WORLD_LOCAL_RANK` | `OMPI_COMM_WORLD_LOCAL_SIZE` | `OMPI_MCA_ess_base_jobid` or `PMIX_NAMESPACE` |
//! | Slurm | `SLURM_PROCID` | `SLURM_NTASKS` | `SLURM_LOCALID` | from `SLURM_STEP_TASKS_PER_NODE` and `SLURM_NODEID` | `SLURM_JOB_ID`, `SLURM_STEP_ID` |
//!
//! A launcher counts as present when its rank variable is set. When several are present
//! (launchers nest: `srun` starting `torchrun`, `iris-run` under Slurm), the innermost one
//! wins, in the order of the table: it is the one that started this process. Within the
//! winning launcher, a missing world size, a value that is not a number, a rank that is
//! not below the world size, or a local rank not below the local world size is an
//! [`Error::InvalidEnv`] naming the variable. `IRIS_JOB_ID`, when set, is the job id
//! whatever the launcher.
//!
//! ## Where the ranks meet
//!
//! Whatever the launcher, torchrun's `MASTER_ADDR` and `MASTER_PORT` name rank 0's node
//! and a port. The job's ranks meet over the network ([`RankEnv::network`]) when both
//! are set, unless the launcher says that every rank runs on this node (its local world
//! size equals the world size): then, and when they are not set, they meet over an
//! abstract Unix socket of this node. `IRIS_RENDEZVOUS=tcp` or `unix` overrides the
//! choice (`tcp` needs `MASTER_ADDR` and `MASTER_PORT`).
//!
//! Rank 0 listens on port `MASTER_PORT + 1`, or `IRIS_MASTER_PORT` when set: the port
//! `MASTER_PORT` itself is held by torchrun's own store (and by `torch.distributed`'s),
//! which the same job may use beside iris. Without a job id from the launcher, a
//! network job's id is `tcp:MASTER_ADDR:MASTER_PORT`.

use std::collections::HashMap;
use std::fmt;

use super::NetworkAddr;
use iris_driver::{Error, Result};

/// The launcher whose variables told this process its rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Launcher {
    /// `iris-run` (the `IRIS_*` variables).
    Iris,
    /// PyTorch's torchrun (`RANK`, `WORLD_SIZE`, ...).
    Torchrun,
    /// Open MPI's `mpirun` (`OMPI_COMM_WORLD_*`).
    OpenMpi,
    /// Slurm's `srun` (`SLURM_PROCID`, ...).
    Slurm,
}

impl Launcher {
    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Launcher::Iris => "iris-run",
            Launcher::Torchrun => "torchrun",
            Launcher::OpenMpi => "Open MPI",
            Launcher::Slurm => "Slurm",
        }
    }
}

impl fmt::Display for Launcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// Where this process sits in its job, as its launcher said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankEnv {
    /// The launcher that set the variables.
    pub launcher: Launcher,
    /// This process's rank.
    pub rank: usize,
    /// How many ranks the job has.
    pub world_size: usize,
    /// This process's rank among the job's ranks on this node, when the launcher says.
    pub local_rank: Option<usize>,
    /// How many of the job's ranks run on this node, when the launcher says.
    pub local_world_size: Option<usize>,
    /// A name shared by the job's ranks and by no other job running now, when the
    /// environment gives one.
    pub job_id: Option<String>,
    /// The variables the rank and the world size were read from (for messages).
    pub vars: (&'static str, &'static str),
    /// Where rank 0 listens when the job's ranks meet over the network; `None` when
    /// they meet on this node (see the module's documentation).
    pub network: Option<NetworkAddr>,
}

impl RankEnv {
    /// Whether the launcher says the job spans several nodes (its local world size is
    /// below the world size).
    pub fn multi_node(&self) -> bool {
        self.local_world_size.is_some_and(|l| l < self.world_size)
    }
}

/// The variables of one launcher.
struct Spec {
    launcher: Launcher,
    rank: &'static str,
    size: &'static str,
    local_rank: &'static str,
    local_size: Option<&'static str>,
}

const SPECS: [Spec; 4] = [
    Spec {
        launcher: Launcher::Iris,
        rank: "IRIS_RANK",
        size: "IRIS_WORLD_SIZE",
        local_rank: "IRIS_LOCAL_RANK",
        local_size: Some("IRIS_LOCAL_WORLD_SIZE"),
    },
    Spec {
        launcher: Launcher::Torchrun,
        rank: "RANK",
        size: "WORLD_SIZE",
        local_rank: "LOCAL_RANK",
        local_size: Some("LOCAL_WORLD_SIZE"),
    },
    Spec {
        launcher: Launcher::OpenMpi,
        rank: "OMPI_COMM_WORLD_RANK",
        size: "OMPI_COMM_WORLD_SIZE",
        local_rank: "OMPI_COMM_WORLD_LOCAL_RANK",
        local_size: Some("OMPI_COMM_WORLD_LOCAL_SIZE"),
    },
    Spec {
        launcher: Launcher::Slurm,
        rank: "SLURM_PROCID",
        size: "SLURM_NTASKS",
        local_rank: "SLURM_LOCALID",
        local_size: None,
    },
];

/// The variables `iris-run` sets, besides the rank and sizes.
pub const IRIS_JOB_ID: &str = "IRIS_JOB_ID";
/// Rank 0's node, for a job whose ranks meet over the network (torchrun's name).
pub const MASTER_ADDR: &str = "MASTER_ADDR";
/// The job's port on rank 0's node (torchrun's name); rank 0 listens on the next one.
pub const MASTER_PORT: &str = "MASTER_PORT";
/// The port rank 0 listens on, instead of `MASTER_PORT + 1`.
pub const IRIS_MASTER_PORT: &str = "IRIS_MASTER_PORT";
/// `tcp` or `unix`: where the ranks meet, instead of the automatic choice.
pub const IRIS_RENDEZVOUS: &str = "IRIS_RENDEZVOUS";

/// Where this process sits in its job, from `env` (variable name to value); `None` when
/// no launcher's rank variable is set.
pub fn rank_env(env: &HashMap<String, String>) -> Result<Option<RankEnv>> {
    let get = |var: &str| env.get(var).map(|v| v.trim()).filter(|v| !v.is_empty());
    let iris_partial = [
        "IRIS_WORLD_SIZE",
        "IRIS_LOCAL_RANK",
        "IRIS_LOCAL_WORLD_SIZE",
    ]
    .into_iter()
    .find(|v| get(v).is_some());
    if let (None, Some(var)) = (get("IRIS_RANK"), iris_partial) {
        return Err(Error::InvalidEnv {
            var: "IRIS_RANK",
            value: String::new(),
            reason: format!("{var} is set but IRIS_RANK is not"),
        });
    }
    let Some(spec) = SPECS.iter().find(|s| get(s.rank).is_some()) else {
        return Ok(None);
    };
    let rank_value = get(spec.rank).unwrap_or_default();
    let rank = parse_count(spec.rank, rank_value)?;
    let size_value = get(spec.size).ok_or_else(|| Error::InvalidEnv {
        var: spec.size,
        value: String::new(),
        reason: format!("{} is set but {} is not", spec.rank, spec.size),
    })?;
    let world_size = parse_count(spec.size, size_value)?;
    if world_size == 0 {
        return Err(Error::InvalidEnv {
            var: spec.size,
            value: size_value.into(),
            reason: "a job has at least one rank".into(),
        });
    }
    if rank >= world_size {
        return Err(Error::InvalidEnv {
            var: spec.rank,
            value: rank_value.into(),
            reason: format!("rank {rank} is not below {}={world_size}", spec.size),
        });
    }
    let local_rank = get(spec.local_rank)
        .map(|v| parse_count(spec.local_rank, v))
        .transpose()?;
    let local_world_size = match spec.local_size {
        Some(var) => get(var).map(|v| parse_count(var, v)).transpose()?,
        None => slurm_local_size(&get)?,
    };
    if let Some(local_size) = local_world_size {
        let var = spec.local_size.unwrap_or("SLURM_STEP_TASKS_PER_NODE");
        if local_size == 0 || local_size > world_size {
            return Err(Error::InvalidEnv {
                var,
                value: local_size.to_string(),
                reason: format!(
                    "a node's rank count must be between 1 and {}={world_size}",
                    spec.size
                ),
            });
        }
        if let Some(local) = local_rank.filter(|&l| l >= local_size) {
            return Err(Error::InvalidEnv {
                var: spec.local_rank,
                value: local.to_string(),
                reason: format!("local rank {local} is not below {var}={local_size}"),
            });
        }
    }
    if let Some(local) = local_rank.filter(|&l| l >= world_size) {
        return Err(Error::InvalidEnv {
            var: spec.local_rank,
            value: local.to_string(),
            reason: format!("local rank {local} is not below {}={world_size}", spec.size),
        });
    }
    let mut job_id = job_id(spec.launcher, &get)?;
    let one_node = local_world_size == Some(world_size);
    let network = network(&get, one_node)?;
    if let (None, Some(_)) = (&job_id, &network) {
        job_id = Some(format!(
            "tcp:{}:{}",
            get(MASTER_ADDR).unwrap_or_default(),
            get(MASTER_PORT).unwrap_or_default()
        ));
    }
    Ok(Some(RankEnv {
        launcher: spec.launcher,
        rank,
        world_size,
        local_rank,
        local_world_size,
        job_id,
        vars: (spec.rank, spec.size),
        network,
    }))
}

/// Where rank 0 listens, when the ranks meet over the network.
fn network<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
    one_node: bool,
) -> Result<Option<NetworkAddr>> {
    let forced = match get(IRIS_RENDEZVOUS) {
        None | Some("auto") => None,
        Some("tcp") => Some(true),
        Some("unix") => Some(false),
        Some(other) => {
            return Err(Error::InvalidEnv {
                var: IRIS_RENDEZVOUS,
                value: other.into(),
                reason: "expected `tcp`, `unix` or `auto`".into(),
            })
        }
    };
    let (addr, port) = (get(MASTER_ADDR), get(MASTER_PORT));
    let wanted = forced.unwrap_or(addr.is_some() && port.is_some() && !one_node);
    if !wanted {
        return Ok(None);
    }
    let missing = |var: &'static str| Error::InvalidEnv {
        var,
        value: String::new(),
        reason: format!(
            "{IRIS_RENDEZVOUS}=tcp needs {MASTER_ADDR} and {MASTER_PORT} (rank 0's node and a port)"
        ),
    };
    let host = addr.ok_or_else(|| missing(MASTER_ADDR))?;
    let port_value = port.ok_or_else(|| missing(MASTER_PORT))?;
    let bad_port = |var: &'static str, value: &str, reason: &str| Error::InvalidEnv {
        var,
        value: value.into(),
        reason: reason.into(),
    };
    let master: u16 = port_value
        .parse()
        .map_err(|_| bad_port(MASTER_PORT, port_value, "expected a port, 0 to 65535"))?;
    let port = match get(IRIS_MASTER_PORT) {
        Some(v) => v
            .parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| bad_port(IRIS_MASTER_PORT, v, "expected a port, 1 to 65535"))?,
        None => master.checked_add(1).ok_or_else(|| {
            bad_port(
                MASTER_PORT,
                port_value,
                "rank 0 listens on MASTER_PORT + 1, which is not a port: set IRIS_MASTER_PORT",
            )
        })?,
    };
    Ok(Some(NetworkAddr {
        host: host.to_string(),
        port,
    }))
}

/// [`rank_env`] over this process's environment. A variable whose value is not UTF-8 is
/// left out (and so, if it is one of the variables read, reported as missing or ignored).
pub fn rank_env_from_process() -> Result<Option<RankEnv>> {
    let env: HashMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    rank_env(&env)
}

fn parse_count(var: &'static str, value: &str) -> Result<usize> {
    value.parse::<usize>().map_err(|_| Error::InvalidEnv {
        var,
        value: value.into(),
        reason: "expected a non-negative integer".into(),
    })
}

/// The number of tasks of this step on this node: `SLURM_STEP_TASKS_PER_NODE` (for
/// example `2(x3),1`: two tasks on each of the first three nodes, one on the fourth),
/// indexed by `SLURM_NODEID`. `None` when either is missing.
fn slurm_local_size<'a>(get: &impl Fn(&str) -> Option<&'a str>) -> Result<Option<usize>> {
    const VAR: &str = "SLURM_STEP_TASKS_PER_NODE";
    let (Some(list), Some(node)) = (get(VAR), get("SLURM_NODEID")) else {
        return Ok(None);
    };
    let node = parse_count("SLURM_NODEID", node)?;
    let malformed = || Error::InvalidEnv {
        var: VAR,
        value: list.into(),
        reason: "expected a list like `2(x3),1`".into(),
    };
    let mut index = 0usize;
    for item in list.split(',') {
        let (count, repeat) = match item.split_once("(x") {
            Some((count, rest)) => {
                let repeat = rest.strip_suffix(')').ok_or_else(malformed)?;
                (count, repeat.parse::<usize>().map_err(|_| malformed())?)
            }
            None => (item, 1),
        };
        let count = count.trim().parse::<usize>().map_err(|_| malformed())?;
        if node < index.saturating_add(repeat) {
            return Ok(Some(count));
        }
        index = index.saturating_add(repeat);
    }
    Err(Error::InvalidEnv {
        var: "SLURM_NODEID",
        value: node.to_string(),
        reason: format!("{VAR}={list} lists {index} node(s)"),
    })
}

/// The job id: `IRIS_JOB_ID`, or what the launcher gives.
fn job_id<'a>(
    launcher: Launcher,
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<Option<String>> {
    if let Some(id) = get(IRIS_JOB_ID) {
        if id.len() > 256 || id.contains('\0') {
            return Err(Error::InvalidEnv {
                var: IRIS_JOB_ID,
                value: id.chars().take(64).collect(),
                reason: "a job id is at most 256 bytes, without NUL".into(),
            });
        }
        return Ok(Some(id.to_string()));
    }
    let join = |vars: &[&str]| -> Option<String> {
        let parts: Vec<&str> = vars.iter().map(|v| get(v).unwrap_or("")).collect();
        parts.iter().any(|p| !p.is_empty()).then(|| parts.join(":"))
    };
    Ok(match launcher {
        Launcher::Iris => None,
        Launcher::Torchrun => join(&[
            "TORCHELASTIC_RUN_ID",
            "MASTER_ADDR",
            "MASTER_PORT",
            "TORCHELASTIC_RESTART_COUNT",
        ])
        .map(|id| format!("torchrun:{id}")),
        Launcher::OpenMpi => get("OMPI_MCA_ess_base_jobid")
            .or_else(|| get("PMIX_NAMESPACE"))
            .map(|id| format!("ompi:{id}")),
        Launcher::Slurm => get("SLURM_JOB_ID")
            .map(|job| format!("slurm:{job}:{}", get("SLURM_STEP_ID").unwrap_or(""))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn found(pairs: &[(&str, &str)]) -> RankEnv {
        rank_env(&env(pairs)).unwrap().unwrap()
    }

    fn error(pairs: &[(&str, &str)]) -> Error {
        rank_env(&env(pairs)).unwrap_err()
    }

    #[test]
    fn nothing_set_is_no_launcher() {
        assert_eq!(rank_env(&env(&[("HOME", "/root")])).unwrap(), None);
        // an allocation shell sets the task count but no task id: not launched
        assert_eq!(rank_env(&env(&[("SLURM_NTASKS", "4")])).unwrap(), None);
        assert_eq!(rank_env(&env(&[("RANK", " ")])).unwrap(), None);
    }

    #[test]
    fn iris_run() {
        let e = found(&[
            ("IRIS_RANK", "3"),
            ("IRIS_WORLD_SIZE", "8"),
            ("IRIS_LOCAL_RANK", "3"),
            ("IRIS_LOCAL_WORLD_SIZE", "8"),
            ("IRIS_JOB_ID", "job-1"),
        ]);
        assert_eq!(e.launcher, Launcher::Iris);
        assert_eq!((e.rank, e.world_size), (3, 8));
        assert_eq!((e.local_rank, e.local_world_size), (Some(3), Some(8)));
        assert_eq!(e.job_id.as_deref(), Some("job-1"));
        assert_eq!(e.vars, ("IRIS_RANK", "IRIS_WORLD_SIZE"));
    }

    #[test]
    fn torchrun() {
        let e = found(&[
            ("RANK", "5"),
            ("WORLD_SIZE", "16"),
            ("LOCAL_RANK", "1"),
            ("LOCAL_WORLD_SIZE", "4"),
            ("TORCHELASTIC_RUN_ID", "abc"),
            ("MASTER_ADDR", "127.0.0.1"),
            ("MASTER_PORT", "29500"),
            ("TORCHELASTIC_RESTART_COUNT", "0"),
        ]);
        assert_eq!(e.launcher, Launcher::Torchrun);
        assert_eq!(
            (e.rank, e.world_size, e.local_rank, e.local_world_size),
            (5, 16, Some(1), Some(4))
        );
        assert_eq!(e.job_id.as_deref(), Some("torchrun:abc:127.0.0.1:29500:0"));
        let bare = found(&[("RANK", "0"), ("WORLD_SIZE", "1")]);
        assert_eq!(bare.job_id, None);
        assert_eq!(bare.local_rank, None);
    }

    #[test]
    fn open_mpi_and_slurm() {
        let e = found(&[
            ("OMPI_COMM_WORLD_RANK", "2"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "2"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "4"),
            ("OMPI_MCA_ess_base_jobid", "12345"),
        ]);
        assert_eq!(e.launcher, Launcher::OpenMpi);
        assert_eq!(
            (e.rank, e.world_size, e.local_rank, e.local_world_size),
            (2, 4, Some(2), Some(4))
        );
        assert_eq!(e.job_id.as_deref(), Some("ompi:12345"));

        let e = found(&[
            ("SLURM_PROCID", "6"),
            ("SLURM_NTASKS", "7"),
            ("SLURM_LOCALID", "0"),
            ("SLURM_NODEID", "3"),
            ("SLURM_STEP_TASKS_PER_NODE", "2(x3),1"),
            ("SLURM_JOB_ID", "99"),
            ("SLURM_STEP_ID", "0"),
        ]);
        assert_eq!(e.launcher, Launcher::Slurm);
        assert_eq!(
            (e.rank, e.world_size, e.local_rank, e.local_world_size),
            (6, 7, Some(0), Some(1))
        );
        assert_eq!(e.job_id.as_deref(), Some("slurm:99:0"));
        let e = found(&[
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "7"),
            ("SLURM_NODEID", "0"),
            ("SLURM_STEP_TASKS_PER_NODE", "2(x3),1"),
        ]);
        assert_eq!(e.local_world_size, Some(2));
    }

    #[test]
    fn master_addr_picks_the_network_unless_the_job_is_on_one_node() {
        let torchrun = |local_size: &str, extra: &[(&'static str, &'static str)]| {
            let mut pairs = vec![
                ("RANK", "3"),
                ("WORLD_SIZE", "4"),
                ("LOCAL_RANK", "1"),
                ("MASTER_ADDR", "10.0.0.1"),
                ("MASTER_PORT", "29500"),
            ];
            if !local_size.is_empty() {
                pairs.push(("LOCAL_WORLD_SIZE", local_size));
            }
            pairs.extend_from_slice(extra);
            rank_env(&env(&pairs))
        };
        let addr = |port| {
            Some(NetworkAddr {
                host: "10.0.0.1".into(),
                port,
            })
        };
        let e = torchrun("2", &[]).unwrap().unwrap();
        assert!(e.multi_node());
        assert_eq!(e.network, addr(29501));
        assert_eq!(e.job_id.as_deref(), Some("torchrun::10.0.0.1:29500:"));
        // one node: the Unix rendezvous, as before
        assert_eq!(torchrun("4", &[]).unwrap().unwrap().network, None);
        // the launcher does not say: the network works either way
        assert_eq!(torchrun("", &[]).unwrap().unwrap().network, addr(29501));
        let e = torchrun(
            "4",
            &[("IRIS_RENDEZVOUS", "tcp"), ("IRIS_MASTER_PORT", "4000")],
        );
        assert_eq!(e.unwrap().unwrap().network, addr(4000));
        let e = torchrun("2", &[("IRIS_RENDEZVOUS", "unix")])
            .unwrap()
            .unwrap();
        assert_eq!(e.network, None);
        // iris-run across nodes sets the same variables
        let e = found(&[
            ("IRIS_RANK", "2"),
            ("IRIS_WORLD_SIZE", "4"),
            ("IRIS_LOCAL_RANK", "0"),
            ("IRIS_LOCAL_WORLD_SIZE", "2"),
            ("MASTER_ADDR", "node-a"),
            ("MASTER_PORT", "7000"),
        ]);
        assert_eq!(e.job_id.as_deref(), Some("tcp:node-a:7000"));
        assert_eq!(
            e.network.map(|n| (n.host, n.port)),
            Some(("node-a".into(), 7001))
        );
        // without MASTER_ADDR a multi-node job has no network address (refused when the
        // world is set up, naming MASTER_ADDR)
        let e = found(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "4"),
            ("LOCAL_WORLD_SIZE", "2"),
        ]);
        assert!(e.multi_node() && e.network.is_none());
    }

    #[test]
    fn network_variables_are_checked() {
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut pairs = vec![("RANK", "0"), ("WORLD_SIZE", "2")];
            pairs.extend_from_slice(extra);
            rank_env(&env(&pairs)).unwrap_err()
        };
        names(
            &with(&[("MASTER_ADDR", "a"), ("MASTER_PORT", "http")]),
            "MASTER_PORT",
            "expected a port",
        );
        names(
            &with(&[("MASTER_ADDR", "a"), ("MASTER_PORT", "65535")]),
            "MASTER_PORT",
            "set IRIS_MASTER_PORT",
        );
        names(
            &with(&[
                ("MASTER_ADDR", "a"),
                ("MASTER_PORT", "1"),
                ("IRIS_MASTER_PORT", "0"),
            ]),
            "IRIS_MASTER_PORT",
            "1 to 65535",
        );
        names(
            &with(&[("IRIS_RENDEZVOUS", "tcp")]),
            "MASTER_ADDR",
            "needs MASTER_ADDR",
        );
        names(
            &with(&[("IRIS_RENDEZVOUS", "udp")]),
            "IRIS_RENDEZVOUS",
            "`tcp`",
        );
    }

    #[test]
    fn the_innermost_launcher_wins() {
        // srun started torchrun, which started this process
        let e = found(&[
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "2"),
            ("RANK", "9"),
            ("WORLD_SIZE", "16"),
            ("IRIS_JOB_ID", "forced"),
        ]);
        assert_eq!(e.launcher, Launcher::Torchrun);
        assert_eq!((e.rank, e.world_size), (9, 16));
        assert_eq!(e.job_id.as_deref(), Some("forced"));
        let e = found(&[
            ("RANK", "9"),
            ("WORLD_SIZE", "16"),
            ("IRIS_RANK", "0"),
            ("IRIS_WORLD_SIZE", "2"),
        ]);
        assert_eq!(e.launcher, Launcher::Iris);
    }

    fn names(err: &Error, var: &str, text: &str) {
        match err {
            Error::InvalidEnv { var: v, .. } => assert_eq!(*v, var, "{err}"),
            other => panic!("not an env error: {other}"),
        }
        assert!(err.to_string().contains(text), "{err}");
    }

    #[test]
    fn malformed_and_contradictory_values_name_the_variable() {
        names(
            &error(&[("RANK", "one"), ("WORLD_SIZE", "2")]),
            "RANK",
            "non-negative integer",
        );
        names(
            &error(&[("RANK", "-1"), ("WORLD_SIZE", "2")]),
            "RANK",
            "non-negative integer",
        );
        names(
            &error(&[("RANK", "0"), ("WORLD_SIZE", "2.5")]),
            "WORLD_SIZE",
            "integer",
        );
        names(
            &error(&[("RANK", "0")]),
            "WORLD_SIZE",
            "RANK is set but WORLD_SIZE is not",
        );
        names(
            &error(&[("RANK", "0"), ("WORLD_SIZE", "0")]),
            "WORLD_SIZE",
            "at least one rank",
        );
        names(
            &error(&[("RANK", "4"), ("WORLD_SIZE", "4")]),
            "RANK",
            "rank 4 is not below WORLD_SIZE=4",
        );
        names(
            &error(&[
                ("OMPI_COMM_WORLD_RANK", "1"),
                ("OMPI_COMM_WORLD_SIZE", "4"),
                ("OMPI_COMM_WORLD_LOCAL_RANK", "2"),
                ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
            ]),
            "OMPI_COMM_WORLD_LOCAL_RANK",
            "local rank 2 is not below OMPI_COMM_WORLD_LOCAL_SIZE=2",
        );
        names(
            &error(&[
                ("RANK", "1"),
                ("WORLD_SIZE", "4"),
                ("LOCAL_WORLD_SIZE", "8"),
            ]),
            "LOCAL_WORLD_SIZE",
            "between 1 and WORLD_SIZE=4",
        );
        names(
            &error(&[
                ("SLURM_PROCID", "1"),
                ("SLURM_NTASKS", "4"),
                ("SLURM_LOCALID", "9"),
            ]),
            "SLURM_LOCALID",
            "not below SLURM_NTASKS=4",
        );
        names(
            &error(&[
                ("SLURM_PROCID", "1"),
                ("SLURM_NTASKS", "4"),
                ("SLURM_NODEID", "0"),
                ("SLURM_STEP_TASKS_PER_NODE", "2(x"),
            ]),
            "SLURM_STEP_TASKS_PER_NODE",
            "2(x3),1",
        );
        names(
            &error(&[
                ("SLURM_PROCID", "1"),
                ("SLURM_NTASKS", "4"),
                ("SLURM_NODEID", "5"),
                ("SLURM_STEP_TASKS_PER_NODE", "2(x2)"),
            ]),
            "SLURM_NODEID",
            "lists 2 node(s)",
        );
        names(
            &error(&[("IRIS_WORLD_SIZE", "2")]),
            "IRIS_RANK",
            "IRIS_WORLD_SIZE is set but IRIS_RANK is not",
        );
        names(
            &error(&[
                ("IRIS_RANK", "0"),
                ("IRIS_WORLD_SIZE", "2"),
                ("IRIS_JOB_ID", &"x".repeat(300)),
            ]),
            "IRIS_JOB_ID",
            "at most 256 bytes",
        );
    }
}
