//! All-to-all with counts on the device: rank `r` sends `send_counts[p]` elements to each
//! rank `p`, its input holding them one peer after another; rank `p` receives them one
//! source after another. The counts are read by the kernel, after an earlier kernel wrote
//! them (a router, say): no host round trip decides the shapes, as MoE token routing
//! needs.

use super::{check_buffers, Ccl, CclElement, KernelId};
use crate::{Error, Result, SymmetricBuffer};

/// The kernels, one per element type `T` (`L` names the instance). Each meets the
/// device-side barrier on entry (every rank's counts and input are written) and on exit
/// (every rank's stores into this rank's output are done).
#[iris::kernels(uses(crate::ccl::barrier))]
#[allow(clippy::too_many_arguments)]
pub(crate) mod kernels {
    use iris::prelude::*;

    /// Pushes this rank's `send_counts[p]` elements for each rank `p` (from `input`, peer
    /// after peer) into `p`'s `output`, after what ranks `0..me` send `p`; writes
    /// `recv_counts[s]` (what rank `s` sends here). Nothing past `in_len` is read and
    /// nothing past `out_len` written: a count that would is recorded in `overflow` (this
    /// rank's copy: 1 for its input, 2 for a peer's output).
    #[kernel(instances((f32, 4), (f64, 2), (f16, 8), (bf16, 8), (i32, 4), (u32, 4), (i64, 2), (u64, 2)))]
    pub fn all_to_all_v<T: Element, const L: usize>(
        input: Symmetric<T>,
        output: Symmetric<T>,
        send_counts: Symmetric<u64>,
        recv_counts: Symmetric<u64>,
        overflow: *mut u32,
        signals: Symmetric<u64>,
        in_len: u64,
        out_len: u64,
        me: u32,
        world: u32,
        timeout_ns: u64,
    ) {
        if ccl_enter(signals, me, world, timeout_ns) {
            let stride = (grid_dim_x() * block_dim_x()) as u64;
            let first = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
            let counts = send_counts.local();
            let src = input.local();
            for k in 0..world {
                let peer = (me + k) % world;
                // This rank's segment for `peer` starts after its segments for ranks
                // before `peer`; it lands after what ranks before `me` send `peer`.
                let mut src_at = 0u64;
                for q in 0..peer {
                    src_at += unsafe { *counts.add(q as usize) };
                }
                let count = unsafe { *counts.add(peer as usize) };
                let mut dst_at = 0u64;
                for s in 0..me {
                    dst_at += load(send_counts.add(peer as usize), s);
                }
                let mut n = count;
                if src_at + n > in_len {
                    n = if src_at < in_len { in_len - src_at } else { 0 };
                    if first == 0 {
                        unsafe { *overflow = 1 };
                    }
                }
                if dst_at + n > out_len {
                    n = if dst_at < out_len {
                        out_len - dst_at
                    } else {
                        0
                    };
                    if first == 0 {
                        unsafe { *overflow = 2 };
                    }
                }
                // 16 bytes a thread where both ends of the segment are 16-byte aligned
                // (the counts before it are whole vectors), the rest element by element.
                let lanes = L as u64;
                let vectors = if src_at % lanes == 0 && dst_at % lanes == 0 {
                    n / lanes
                } else {
                    0
                };
                let vsrc = unsafe { src.add(src_at as usize) }.cast::<[T; L]>();
                let vdst = output.add(dst_at as usize).cast::<[T; L]>();
                let mut v = first;
                while v < vectors {
                    store(vdst.add(v as usize), unsafe { *vsrc.add(v as usize) }, peer);
                    v += stride;
                }
                let dst = output.add(dst_at as usize);
                let mut i = vectors * lanes + first;
                while i < n {
                    store(
                        dst.add(i as usize),
                        unsafe { *src.add((src_at + i) as usize) },
                        peer,
                    );
                    i += stride;
                }
            }
            if first < world as u64 {
                let s = first as u32;
                let got = load(send_counts.add(me as usize), s);
                unsafe { *recv_counts.local().add(s as usize) = got };
            }
            ccl_leave(signals, me, world, timeout_ns);
        }
    }
}

/// All-to-all with counts on the device: this rank sends `send_counts[p]` elements to
/// each rank `p` (its `input` holds them peer after peer, from the start), and receives
/// each rank's elements for it into `output`, source after source from the start;
/// `recv_counts[s]` is set to what rank `s` sent. The counts are read on the device when
/// the kernel runs: an earlier kernel on each rank's stream may write them.
///
/// Shapes: `send_counts.len() == recv_counts.len() == world_size`; all four symmetric
/// buffers of `ccl`'s context, input and output different allocations. The counts are not
/// known before the kernel runs: counts that reach past the input or a peer's output move
/// only what fits, and the returned [`AllToAllV`]'s [`check`](AllToAllV::check) says so.
/// Collective, asynchronous: [`Ccl::synchronize`] waits and reports a peer that never
/// arrived.
pub fn all_to_all_v<'ctx, T: CclElement>(
    ccl: &Ccl<'ctx>,
    input: &SymmetricBuffer<'_, T>,
    send_counts: &SymmetricBuffer<'_, u64>,
    output: &SymmetricBuffer<'_, T>,
    recv_counts: &SymmetricBuffer<'_, u64>,
) -> Result<AllToAllV<'ctx>> {
    let world = ccl.world_size();
    for (what, counts) in [
        ("ccl::all_to_all_v send_counts (one per rank)", send_counts),
        ("ccl::all_to_all_v recv_counts (one per rank)", recv_counts),
    ] {
        if counts.len() != world {
            return Err(Error::LengthMismatch {
                what,
                expected: world,
                got: counts.len(),
            });
        }
    }
    check_buffers(ccl, "ccl::all_to_all_v", input, output)?;
    check_buffers(ccl, "ccl::all_to_all_v (counts)", send_counts, recv_counts)?;
    let (unit, index) = (
        KernelId::AllToAllV.unit(),
        KernelId::AllToAllV.index::<T>()?,
    );
    let iris = ccl.iris();
    let _span = iris.trace_span(
        KernelId::AllToAllV.call_name(),
        (input.len() * std::mem::size_of::<T>()) as u64,
    );
    let overflow = iris.zeros::<u32>(1)?;
    let config = ccl.launch_config_for(unit, ccl.block_threads())?;
    ccl.wait_for_device_peers()?;
    let mut args = iris.args(unit, index);
    args.symmetric(input)?;
    args.symmetric(output)?;
    args.symmetric(send_counts)?;
    args.symmetric(recv_counts)?;
    args.pointer(&overflow)?;
    args.symmetric(ccl.signals())?;
    args.value(input.len() as u64);
    args.value(output.len() as u64);
    args.value(ccl.rank() as u32);
    args.value(world as u32);
    args.value(ccl.wait_limit_ns());
    iris.launch(config, args)?;
    Ok(AllToAllV { overflow })
}

/// A launched [`all_to_all_v`]: whether its counts fit the buffers is known once it ran.
pub struct AllToAllV<'ctx> {
    overflow: crate::Buffer<'ctx, u32>,
}

impl AllToAllV<'_> {
    /// After the rank's work (reading waits for it): `Ok` when every count fit, else an
    /// error saying whether this rank's input was too short for its send counts or a
    /// peer's output for what this rank sent it (only what fit was moved).
    pub fn check(&self) -> Result<()> {
        match self.overflow.to_vec()?.first().copied().unwrap_or(0) {
            0 => Ok(()),
            1 => Err(Error::InvalidConfig(
                "ccl::all_to_all_v: the send counts reach past this rank's input; only what fit was sent".into(),
            )),
            _ => Err(Error::InvalidConfig(
                "ccl::all_to_all_v: what this rank sent reaches past a peer's output; only what fit was stored".into(),
            )),
        }
    }
}
