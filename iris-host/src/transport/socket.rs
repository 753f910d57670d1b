//! Framed messages with file descriptors over a stream socket: an abstract-namespace
//! Unix socket (inside a node), or a TCP connection (between nodes; no descriptors).
//!
//! A frame is a 24-byte header (magic, kind, rank, descriptor count, payload length)
//! followed by the payload; its descriptors travel with `SCM_RIGHTS` on the header's
//! first bytes. Every socket is non-blocking and every wait is bounded by a deadline.
//! Sends use `MSG_NOSIGNAL`: a peer that is gone is an error, not a `SIGPIPE`.

use std::io;
use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags,
    SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketAddrUnix, SocketFlags, SocketType,
};

/// The most descriptors one frame carries (the kernel's `SCM_MAX_FD`).
pub(crate) const MAX_FDS: usize = 253;

const MAGIC: u32 = 0x4952_4953;
const HEADER: usize = 24;
/// The largest payload accepted (a guard against garbage lengths).
const MAX_PAYLOAD: u64 = 1 << 34;

/// What a frame means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A rank introduces itself to the hub.
    Hello = 1,
    /// The hub: every rank has arrived.
    Welcome = 2,
    /// A rank's contribution to a collective.
    Contribute = 3,
    /// The hub: one rank's contribution, to every other rank.
    Result = 4,
    /// The hub: the job failed (why is in the payload).
    Abort = 5,
    /// A rank: it failed (why is in the payload).
    Fail = 6,
    /// A rank leaves the job normally.
    Bye = 7,
    /// The hub refuses a connection (why is in the payload).
    Reject = 8,
}

impl Kind {
    fn from_u32(v: u32) -> Option<Kind> {
        Some(match v {
            1 => Kind::Hello,
            2 => Kind::Welcome,
            3 => Kind::Contribute,
            4 => Kind::Result,
            5 => Kind::Abort,
            6 => Kind::Fail,
            7 => Kind::Bye,
            8 => Kind::Reject,
            _ => return None,
        })
    }
}

/// A received frame.
#[derive(Debug)]
pub(crate) struct Frame {
    pub kind: Kind,
    pub rank: usize,
    pub payload: Vec<u8>,
    pub fds: Vec<OwnedFd>,
}

/// Why a send or receive failed.
#[derive(Debug)]
pub(crate) enum WireError {
    /// The peer closed the connection (it left or died).
    Closed,
    /// The deadline passed.
    TimedOut,
    /// A frame that breaks the protocol.
    Malformed(String),
    /// The operating system refused.
    Io(io::Error),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Closed => f.write_str("the connection closed"),
            WireError::TimedOut => f.write_str("timed out"),
            WireError::Malformed(why) => write!(f, "malformed frame: {why}"),
            WireError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl From<rustix::io::Errno> for WireError {
    fn from(e: rustix::io::Errno) -> Self {
        match e {
            rustix::io::Errno::PIPE | rustix::io::Errno::CONNRESET => WireError::Closed,
            other => WireError::Io(other.into()),
        }
    }
}

/// The abstract socket name of job `job_id` (hashed: any id fits; the id itself is
/// checked in the hello).
pub(crate) fn socket_name(job_id: &str) -> Vec<u8> {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in job_id.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("iris-rendezvous/{hash:016x}").into_bytes()
}

fn new_socket() -> io::Result<OwnedFd> {
    Ok(rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?)
}

/// Binds and listens on the abstract name `name` (`AddrInUse` when another process has
/// it).
pub(crate) fn listen(name: &[u8]) -> io::Result<OwnedFd> {
    let addr = SocketAddrUnix::new_abstract_name(name)?;
    let fd = new_socket()?;
    rustix::net::bind(&fd, &addr)?;
    rustix::net::listen(&fd, 1024)?;
    Ok(fd)
}

/// Accepts one pending connection, if any.
pub(crate) fn accept(listener: BorrowedFd<'_>) -> io::Result<Option<Conn>> {
    match rustix::net::accept_with(listener, SocketFlags::NONBLOCK | SocketFlags::CLOEXEC) {
        Ok(fd) => {
            // frames are small and answered at once; a Unix socket refuses the option
            let _ = rustix::net::sockopt::set_tcp_nodelay(&fd, true);
            Ok(Some(Conn { fd }))
        }
        Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Connects to the abstract name `name`; `Ok(None)` while nobody listens there yet (or
/// its backlog is full).
pub(crate) fn connect(name: &[u8]) -> io::Result<Option<Conn>> {
    let addr = SocketAddrUnix::new_abstract_name(name)?;
    let fd = new_socket()?;
    match rustix::net::connect(&fd, &addr) {
        Ok(()) => Ok(Some(Conn { fd })),
        Err(rustix::io::Errno::CONNREFUSED)
        | Err(rustix::io::Errno::NOENT)
        | Err(rustix::io::Errno::AGAIN)
        | Err(rustix::io::Errno::INTR) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Waits until one of `fds` is readable (or hung up); returns which, or an empty list
/// when the deadline passes.
pub(crate) fn wait_readable(fds: &[BorrowedFd<'_>], deadline: Instant) -> io::Result<Vec<usize>> {
    loop {
        let mut polls: Vec<PollFd<'_>> = fds
            .iter()
            .map(|fd| PollFd::from_borrowed_fd(*fd, PollFlags::IN))
            .collect();
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout = timespec(left);
        match rustix::event::poll(&mut polls, Some(&timeout)) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
        let ready: Vec<usize> = polls
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.revents().is_empty())
            .map(|(i, _)| i)
            .collect();
        if !ready.is_empty() || Instant::now() >= deadline {
            return Ok(ready);
        }
    }
}

fn timespec(d: Duration) -> Timespec {
    Timespec {
        tv_sec: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: d.subsec_nanos().into(),
    }
}

fn wait_for(fd: BorrowedFd<'_>, flags: PollFlags, deadline: Instant) -> Result<(), WireError> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(WireError::TimedOut);
        }
        let mut polls = [PollFd::from_borrowed_fd(fd, flags)];
        match rustix::event::poll(&mut polls, Some(&timespec(left))) {
            Ok(0) => continue,
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// One end of a connection.
#[derive(Debug)]
pub(crate) struct Conn {
    fd: OwnedFd,
}

impl Conn {
    /// A connection over `fd`, a connected non-blocking stream socket.
    pub(crate) fn from_fd(fd: OwnedFd) -> Conn {
        Conn { fd }
    }

    /// The socket, for polling.
    pub(crate) fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Sends one frame, with `fds` (at most [`MAX_FDS`]).
    pub(crate) fn send(
        &self,
        kind: Kind,
        rank: usize,
        payload: &[u8],
        fds: &[BorrowedFd<'_>],
        deadline: Instant,
    ) -> Result<(), WireError> {
        if fds.len() > MAX_FDS {
            return Err(WireError::Malformed(format!(
                "{} descriptors in one message; at most {MAX_FDS}",
                fds.len()
            )));
        }
        let mut header = [0u8; HEADER];
        header[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        header[4..8].copy_from_slice(&(kind as u32).to_le_bytes());
        header[8..12].copy_from_slice(&u32::try_from(rank).unwrap_or(u32::MAX).to_le_bytes());
        header[12..16].copy_from_slice(&(fds.len() as u32).to_le_bytes());
        header[16..24].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        let total = HEADER + payload.len();
        let mut sent = 0usize;
        let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
        while sent < total {
            let (h, p) = if sent < HEADER {
                (&header[sent..], payload)
            } else {
                (&header[HEADER..], &payload[sent - HEADER..])
            };
            let iov = [IoSlice::new(h), IoSlice::new(p)];
            let mut control = SendAncillaryBuffer::new(&mut space);
            if sent == 0 && !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
                return Err(WireError::Malformed("descriptors do not fit".into()));
            }
            match rustix::net::sendmsg(&self.fd, &iov, &mut control, SendFlags::NOSIGNAL) {
                Ok(n) => sent += n,
                Err(rustix::io::Errno::AGAIN) => {
                    wait_for(self.fd.as_fd(), PollFlags::OUT, deadline)?;
                }
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Receives one frame.
    pub(crate) fn recv(&self, deadline: Instant) -> Result<Frame, WireError> {
        let mut fds = Vec::new();
        let mut header = [0u8; HEADER];
        self.read_exact(&mut header, &mut fds, deadline, true)?;
        let word =
            |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
        if word(0) != MAGIC {
            return Err(WireError::Malformed("bad magic".into()));
        }
        let kind = Kind::from_u32(word(4))
            .ok_or_else(|| WireError::Malformed(format!("unknown kind {}", word(4))))?;
        let rank = word(8) as usize;
        let nfds = word(12) as usize;
        let mut len_bytes = [0u8; 8];
        len_bytes.copy_from_slice(&header[16..24]);
        let len = u64::from_le_bytes(len_bytes);
        if len > MAX_PAYLOAD {
            return Err(WireError::Malformed(format!("a payload of {len} bytes")));
        }
        let mut payload = vec![0u8; len as usize];
        self.read_exact(&mut payload, &mut fds, deadline, false)?;
        if fds.len() != nfds {
            return Err(WireError::Malformed(format!(
                "{nfds} descriptors announced, {} received",
                fds.len()
            )));
        }
        Ok(Frame {
            kind,
            rank,
            payload,
            fds,
        })
    }

    fn read_exact(
        &self,
        buf: &mut [u8],
        fds: &mut Vec<OwnedFd>,
        deadline: Instant,
        frame_start: bool,
    ) -> Result<(), WireError> {
        let mut got = 0usize;
        let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
        while got < buf.len() {
            let mut control = RecvAncillaryBuffer::new(&mut space);
            let mut iov = [IoSliceMut::new(&mut buf[got..])];
            match rustix::net::recvmsg(&self.fd, &mut iov, &mut control, RecvFlags::CMSG_CLOEXEC) {
                Ok(msg) => {
                    for message in control.drain() {
                        if let RecvAncillaryMessage::ScmRights(received) = message {
                            fds.extend(received);
                        }
                    }
                    if msg.flags.contains(ReturnFlags::CTRUNC) {
                        return Err(WireError::Malformed("descriptors were truncated".into()));
                    }
                    if msg.bytes == 0 {
                        return Err(if frame_start && got == 0 {
                            WireError::Closed
                        } else {
                            WireError::Malformed("the connection closed inside a message".into())
                        });
                    }
                    got += msg.bytes;
                }
                Err(rustix::io::Errno::AGAIN) => {
                    wait_for(self.fd.as_fd(), PollFlags::IN, deadline)?;
                }
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, Write};

    fn pair() -> (Conn, Conn) {
        let (a, b) = rustix::net::socketpair(
            AddressFamily::UNIX,
            SocketType::STREAM,
            SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
            None,
        )
        .unwrap();
        (Conn { fd: a }, Conn { fd: b })
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    #[test]
    fn frames_carry_bytes_and_descriptors() {
        let (a, b) = pair();
        let mut file = std::fs::File::from(
            rustix::fs::memfd_create("t", rustix::fs::MemfdFlags::CLOEXEC).unwrap(),
        );
        file.write_all(b"shared").unwrap();
        let big = vec![7u8; 1 << 20];
        std::thread::scope(|s| {
            s.spawn(|| {
                a.send(Kind::Contribute, 3, b"hello", &[file.as_fd()], soon())
                    .unwrap();
                a.send(Kind::Result, 1, &big, &[], soon()).unwrap();
                a.send(Kind::Bye, 3, &[], &[file.as_fd(), file.as_fd()], soon())
                    .unwrap();
            });
            let f = b.recv(soon()).unwrap();
            assert_eq!(
                (f.kind, f.rank, &f.payload[..]),
                (Kind::Contribute, 3, &b"hello"[..])
            );
            assert_eq!(f.fds.len(), 1);
            let mut got = std::fs::File::from(f.fds.into_iter().next().unwrap());
            let mut text = String::new();
            got.rewind().unwrap();
            got.read_to_string(&mut text).unwrap();
            assert_eq!(text, "shared");
            let f = b.recv(soon()).unwrap();
            assert_eq!(f.payload, big);
            assert!(f.fds.is_empty());
            let f = b.recv(soon()).unwrap();
            assert_eq!((f.kind, f.fds.len()), (Kind::Bye, 2));
        });
        drop(a);
        assert!(matches!(b.recv(soon()), Err(WireError::Closed)));
    }

    #[test]
    fn waits_are_bounded_and_sends_to_a_closed_peer_fail() {
        let (a, b) = pair();
        let start = Instant::now();
        let r = b.recv(Instant::now() + Duration::from_millis(100));
        assert!(matches!(r, Err(WireError::TimedOut)), "{r:?}");
        assert!(start.elapsed() < Duration::from_secs(2));
        drop(b);
        let r = a.send(Kind::Hello, 0, b"x", &[], soon());
        assert!(matches!(r, Err(WireError::Closed)), "{r:?}");
    }

    #[test]
    fn abstract_names_listen_connect_and_clash() {
        let name = socket_name(&format!("socket-test-{}", std::process::id()));
        assert!(connect(&name).unwrap().is_none(), "nobody listens yet");
        let listener = listen(&name).unwrap();
        let err = listen(&name).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
        let client = connect(&name).unwrap().unwrap();
        let server = loop {
            if let Some(c) = accept(listener.as_fd()).unwrap() {
                break c;
            }
            wait_readable(&[listener.as_fd()], soon()).unwrap();
        };
        client.send(Kind::Hello, 2, b"hi", &[], soon()).unwrap();
        assert_eq!(server.recv(soon()).unwrap().rank, 2);
        drop(listener);
        // the name is gone with the socket: nothing is left behind
        assert!(listen(&name).is_ok());
    }
}
