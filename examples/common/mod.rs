//! What the examples share: command-line options, the backend probe, timing on the rank's
//! stream, and the result table.
#![allow(dead_code)]

pub mod mailbox;
pub mod signal_mailbox;
use iris::{BackendKind, Iris, World};

/// `--ranks`, `--elems`, `--iters` and any example-specific flags.
pub struct Options {
    /// World sizes to run, one after another.
    pub ranks: Vec<usize>,
    /// Problem sizes (elements; the meaning is the example's).
    pub elems: Vec<usize>,
    /// Timed repetitions (the median is reported).
    pub iters: usize,
    /// Flags the example declared, with their values.
    pub extra: Vec<(String, String)>,
}

impl Options {
    /// The value of an example-specific flag.
    pub fn extra(&self, flag: &str) -> Option<&str> {
        self.extra
            .iter()
            .find(|(f, _)| f == flag)
            .map(|(_, v)| v.as_str())
    }
}

/// `4096`, `4K`, `1M`: a count with an optional binary suffix.
pub fn parse_count(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let (digits, scale) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1 << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits
        .parse::<usize>()
        .map(|n| n * scale)
        .map_err(|e| format!("`{s}`: {e}"))
}

/// A comma-separated list of counts.
pub fn parse_list(s: &str) -> Result<Vec<usize>, String> {
    s.split(',').map(parse_count).collect()
}

/// Parses the command line: `--ranks 1,2,4,8`, `--elems 4K,1M`, `--iters K`, and the
/// example's own `flags` (each takes a value). `usage` is printed for `--help`.
/// `default_elems` gives the sizes when `--elems` is absent, for the backend found.
pub fn parse_options(
    name: &str,
    usage: &str,
    default_ranks: &[usize],
    default_elems: fn(BackendKind) -> Vec<usize>,
    flags: &[&str],
) -> Result<Options, String> {
    let mut ranks = default_ranks.to_vec();
    let mut elems = None;
    let mut iters = 20;
    let mut extra = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--ranks" => {
                ranks = parse_list(&value()?).map_err(|e| format!("--ranks: {e}"))?;
                if ranks.contains(&0) {
                    return Err("--ranks: a world has at least one rank".into());
                }
            }
            "--elems" => elems = Some(parse_list(&value()?).map_err(|e| format!("--elems: {e}"))?),
            "--iters" => {
                iters = parse_count(&value()?)
                    .map_err(|e| format!("--iters: {e}"))?
                    .max(1)
            }
            "-h" | "--help" => {
                println!("usage: {name} {usage}");
                std::process::exit(0);
            }
            f if flags.contains(&f) => extra.push((f.to_string(), value()?)),
            other => return Err(format!("unknown argument `{other}` (try --help)")),
        }
    }
    let elems = match elems {
        Some(e) => e,
        None => default_elems(probe_backend().map_err(|e| e.to_string())?),
    };
    Ok(Options {
        ranks,
        elems,
        iters,
        extra,
    })
}

/// The backend a world would run on here (no world is made: nothing is traced).
pub fn probe_backend() -> iris::Result<BackendKind> {
    World::default_backend()
}

/// The median time in milliseconds of `iters` runs of `work`, each measured between two
/// events on the rank's stream after a host barrier (so that every rank starts together).
/// One untimed run first.
pub fn median_ms(
    iris: &Iris,
    iters: usize,
    mut work: impl FnMut() -> iris::Result<()>,
) -> iris::Result<f32> {
    iris.barrier()?;
    work()?;
    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters.max(1) {
        iris.barrier()?;
        let start = iris.record_event()?;
        work()?;
        let end = iris.record_event()?;
        end.synchronize()?;
        times.push(start.elapsed_ms(&end)?);
    }
    iris.barrier()?;
    times.sort_by(f32::total_cmp);
    Ok(times[times.len() / 2])
}

/// The slowest rank's time, from every rank's.
pub fn slowest(times: impl IntoIterator<Item = f32>) -> f32 {
    times.into_iter().fold(0.0, f32::max)
}

/// Gigabytes per second of `bytes` in `ms` milliseconds.
pub fn gbps(bytes: f64, ms: f32) -> f64 {
    bytes / (f64::from(ms) * 1e-3) / 1e9
}

/// Bytes as `512 B`, `4 KiB`, `1 MiB`.
pub fn human_bytes(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// A table: a header row and rows of cells, right-aligned; the last column left-aligned.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names.
    pub fn new(header: &[&str]) -> Self {
        Self {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Prints it to stdout.
    pub fn print(&self) {
        let columns = self.header.len();
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .chain(std::iter::once(&self.header[c]))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: &[String]| {
            let parts: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(c, s)| {
                    if c + 1 == columns {
                        s.clone()
                    } else {
                        format!("{s:>w$}", w = widths[c])
                    }
                })
                .collect();
            println!("{}", parts.join("  "));
        };
        line(&self.header);
        for r in &self.rows {
            line(r);
        }
    }
}

/// `yes` or `NO`.
pub fn yes_no(ok: bool) -> String {
    if ok { "yes" } else { "NO" }.to_string()
}

/// `n` random `f32`s in `[-1, 1)`.
pub fn random_f32(n: usize) -> Vec<f32> {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// Whether `got` matches `want` within `rel` of each element's `scale` (exact where `rel`
/// is 0); a NaN (an element nobody wrote) never matches.
pub fn close(got: &[f32], want: &[f32], scale: &[f32], rel: f32) -> bool {
    got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .zip(scale)
            .all(|((g, w), s)| (g - w).abs() <= rel * s.max(w.abs()).max(f32::MIN_POSITIVE))
}

/// One measured collective: which variant, its size, the slowest rank's median time.
pub struct Measured {
    /// The variant's name.
    pub variant: String,
    /// Bytes of the collective's data per rank (the output of an all-gather, the input of
    /// an all-reduce, reduce-scatter or all-to-all).
    pub bytes: usize,
    /// The slowest rank's median milliseconds.
    pub ms: f32,
    /// Whether every rank's result matched the host reference.
    pub correct: bool,
}

/// Runs `run_rank` in a world of each size in `ranks` and prints one row per measurement,
/// with the algorithm bandwidth (`bytes / time`) and the bus bandwidth (`algbw *
/// bus_factor(world)`, NCCL's convention). Returns whether everything was correct.
pub fn run_collective_example(
    name: &str,
    ranks: &[usize],
    heap_bytes: usize,
    bus_factor: fn(usize) -> f64,
    run_rank: impl Fn(&Iris) -> iris::Result<Vec<Measured>> + Sync,
) -> Result<bool, String> {
    let mut table = Table::new(&[
        "ranks",
        "backend",
        "variant",
        "bytes",
        "time (us)",
        "algbw GB/s",
        "busbw GB/s",
        "correct",
        "device",
    ]);
    let mut all_correct = true;
    for &world in ranks {
        let per_rank = World::threads(world)
            .heap_bytes(heap_bytes)
            .run(|iris| {
                Ok((
                    iris.backend_kind(),
                    iris.device_info().name.clone(),
                    run_rank(iris)?,
                ))
            })
            .map_err(|e| format!("{name} at {world} ranks failed: {e}"))?;
        let (backend, device) = (per_rank[0].0, per_rank[0].1.clone());
        for (i, m) in per_rank[0].2.iter().enumerate() {
            let ms = slowest(per_rank.iter().map(|r| r.2[i].ms));
            let correct = per_rank.iter().all(|r| r.2[i].correct);
            all_correct &= correct;
            let algbw = gbps(m.bytes as f64, ms);
            table.row(vec![
                world.to_string(),
                backend.to_string(),
                m.variant.clone(),
                human_bytes(m.bytes),
                format!("{:.1}", ms * 1e3),
                format!("{algbw:.2}"),
                format!("{:.2}", algbw * bus_factor(world)),
                yes_no(correct),
                device.clone(),
            ]);
        }
    }
    table.print();
    Ok(all_correct)
}
