//! Where a rendezvous hub listens and its members connect: an abstract-namespace Unix
//! socket (the ranks of one node; frames may carry file descriptors) or a TCP port
//! (the ranks of several nodes; frames carry bytes only). Both give the same
//! non-blocking [`Conn`], so the hub and member code is one for both.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use super::socket::{self, Conn};

/// Where a rendezvous hub listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// An abstract Unix socket name (see [`socket::socket_name`]).
    Unix(Vec<u8>),
    /// A TCP address: the hub listens on its port on every interface of its family,
    /// the members connect to it.
    Tcp(SocketAddr),
}

impl Endpoint {
    /// Whether frames through it may carry file descriptors (only inside a node).
    pub(crate) fn carries_fds(&self) -> bool {
        matches!(self, Endpoint::Unix(_))
    }

    /// Where it is, for messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Endpoint::Unix(name) => {
                format!(
                    "the abstract Unix socket @{}",
                    String::from_utf8_lossy(name)
                )
            }
            Endpoint::Tcp(addr) => format!("TCP {addr}"),
        }
    }

    /// Binds and listens (`AddrInUse` when another process has it).
    pub(crate) fn listen(&self) -> io::Result<OwnedFd> {
        match self {
            Endpoint::Unix(name) => socket::listen(name),
            Endpoint::Tcp(addr) => {
                let any = match addr {
                    SocketAddr::V4(_) => SocketAddr::from((Ipv4Addr::UNSPECIFIED, addr.port())),
                    SocketAddr::V6(_) => SocketAddr::from((Ipv6Addr::UNSPECIFIED, addr.port())),
                };
                let listener = TcpListener::bind(any)?;
                listener.set_nonblocking(true)?;
                Ok(listener.into())
            }
        }
    }

    /// Connects; `Ok(None)` while nobody listens there yet (or the network does not
    /// reach it yet): the caller retries until its deadline.
    pub(crate) fn connect(&self, deadline: Instant) -> io::Result<Option<Conn>> {
        match self {
            Endpoint::Unix(name) => socket::connect(name),
            Endpoint::Tcp(addr) => {
                let left = deadline
                    .saturating_duration_since(Instant::now())
                    .clamp(Duration::from_millis(10), Duration::from_secs(1));
                match TcpStream::connect_timeout(addr, left) {
                    Ok(stream) => {
                        stream.set_nodelay(true)?;
                        stream.set_nonblocking(true)?;
                        Ok(Some(Conn::from_fd(stream.into())))
                    }
                    Err(e) if retryable(&e) => Ok(None),
                    Err(e) => Err(e),
                }
            }
        }
    }
}

/// Whether a TCP connection attempt may succeed later (rank 0 not listening yet, a
/// route not up yet).
fn retryable(e: &io::Error) -> bool {
    use io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionRefused
            | ConnectionReset
            | ConnectionAborted
            | TimedOut
            | WouldBlock
            | Interrupted
            | HostUnreachable
            | NetworkUnreachable
            | AddrNotAvailable
    )
}

/// The first address `host:port` resolves to (IPv4 first: the unspecified IPv4 address
/// is what a hub of a dual-stack host most often is reached by).
pub(crate) fn resolve(host: &str, port: u16) -> io::Result<SocketAddr> {
    use std::net::ToSocketAddrs;
    let addrs: Vec<SocketAddr> = (host, port).to_socket_addrs()?.collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("{host:?} resolves to no address"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn tcp_listens_connects_and_frames_bytes() {
        // a port nobody listens on: bind one, learn it, close it
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let endpoint = Endpoint::Tcp(resolve("127.0.0.1", port).unwrap());
        assert!(!endpoint.carries_fds());
        let soon = || Instant::now() + Duration::from_secs(5);
        assert!(
            endpoint.connect(soon()).unwrap().is_none(),
            "nobody listens"
        );
        let listener = endpoint.listen().unwrap();
        let client = endpoint.connect(soon()).unwrap().unwrap();
        let server = loop {
            if let Some(c) = socket::accept(listener.as_fd()).unwrap() {
                break c;
            }
            socket::wait_readable(&[listener.as_fd()], soon()).unwrap();
        };
        client
            .send(socket::Kind::Hello, 3, b"over tcp", &[], soon())
            .unwrap();
        let frame = server.recv(soon()).unwrap();
        assert_eq!((frame.rank, &frame.payload[..]), (3, &b"over tcp"[..]));
        drop(client);
        assert!(matches!(
            server.recv(soon()),
            Err(socket::WireError::Closed)
        ));
        assert!(resolve("no-such-host.invalid", 1).is_err());
    }
}
