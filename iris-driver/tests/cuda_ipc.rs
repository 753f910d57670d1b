//! CUDA device memory shared between processes of one node: the parent allocates
//! exportable memory, fills it, and hands it to a child process (this test binary run
//! again, with `IRIS_CUDA_IPC_ROLE` naming the child's part) over a Unix socket: a file
//! descriptor passed with `SCM_RIGHTS`, or the 64-byte legacy IPC handle as bytes. The
//! child maps it, checks that it sees the parent's bytes, writes its own pattern, and the
//! parent checks that it sees the child's write while the child still holds the mapping.
//!
//! Cases: the virtual-memory API through `Device::alloc_exportable`/`export_fd`/
//! `import_fd`; the legacy IPC API with its handle inside a memfd (same calls); the legacy
//! IPC API with the handle as bytes (`CudaDevice::ipc_handle`/`open_ipc_handle`); and
//! imports within one process. Without a CUDA driver every test prints why it is skipped
//! and passes, unless `IRIS_REQUIRE_GPU` is set, which makes that a failure.

use std::io::{IoSlice, IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use iris_driver::cuda::{self, CudaDevice, SharedApi, IPC_HANDLE_BYTES};
use iris_driver::{Device, MemoryKind, Stream};
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

const ROLE: &str = "IRIS_CUDA_IPC_ROLE";
const SOCKET: &str = "IRIS_CUDA_IPC_SOCKET";
const BYTES_VAR: &str = "IRIS_CUDA_IPC_BYTES";
const WAIT: Duration = Duration::from_secs(60);

/// Not a multiple of the VMM granularity, so that rounding is exercised.
const BYTES: usize = (1 << 20) + 12;
/// What the parent fills the memory with before the child maps it.
const PARENT_BYTE: u8 = 0x5a;

/// What the child writes: a pattern that differs per word and per case.
fn pattern(case: &str) -> Vec<u8> {
    let salt = case.bytes().map(u32::from).sum::<u32>();
    (0..BYTES / 4)
        .flat_map(|i| {
            (i as u32)
                .wrapping_mul(2_654_435_761)
                .wrapping_add(salt)
                .to_ne_bytes()
        })
        .collect()
}

fn cuda_device() -> Option<Arc<CudaDevice>> {
    match cuda::open_cuda() {
        Ok(backend) => match backend.cuda_device(0) {
            Ok(device) => Some(device),
            Err(err) => panic!("device 0 of an opened CUDA backend: {err}"),
        },
        Err(err) if std::env::var_os("IRIS_REQUIRE_GPU").is_some() => {
            panic!("IRIS_REQUIRE_GPU is set but the CUDA backend does not open: {err}")
        }
        Err(err) => {
            eprintln!("skipped: {err}");
            None
        }
    }
}

fn read(device: &CudaDevice, stream: &dyn Stream, addr: u64, len: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; len];
    // SAFETY: `addr..addr + len` lies in a live mapping of this device.
    unsafe { device.memcpy_dtoh(stream, &mut bytes, addr) }.expect("dtoh");
    bytes
}

fn write(device: &CudaDevice, stream: &dyn Stream, addr: u64, bytes: &[u8]) {
    // SAFETY: as in `read`.
    unsafe { device.memcpy_htod(stream, addr, bytes) }.expect("htod");
}

fn fill(device: &CudaDevice, stream: &dyn Stream, addr: u64, value: u8, len: usize) {
    // SAFETY: as in `read`.
    unsafe { device.memset(stream, addr, value, len) }.expect("memset");
    stream.synchronize(WAIT).expect("sync");
}

/// Sends `payload`, and `fd` with `SCM_RIGHTS` when given.
fn send(stream: &UnixStream, payload: &[u8], fd: Option<BorrowedFd<'_>>) {
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds = fd.map(|fd| [fd]);
    if let Some(fds) = &fds {
        assert!(control.push(SendAncillaryMessage::ScmRights(fds)));
    }
    let sent = rustix::net::sendmsg(
        stream,
        &[IoSlice::new(payload)],
        &mut control,
        SendFlags::NOSIGNAL,
    )
    .expect("sendmsg");
    assert_eq!(sent, payload.len(), "a short sendmsg");
}

/// Receives one message of at most `max` bytes and the descriptor it carries, if any.
fn receive(stream: &UnixStream, max: usize) -> (Vec<u8>, Option<OwnedFd>) {
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut buf = vec![0u8; max];
    let got = rustix::net::recvmsg(
        stream,
        &mut [IoSliceMut::new(&mut buf)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )
    .expect("recvmsg");
    buf.truncate(got.bytes);
    let mut fd = None;
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = message {
            for received in fds {
                fd.get_or_insert(received);
            }
        }
    }
    (buf, fd)
}

fn byte(stream: &mut UnixStream) -> u8 {
    let mut b = [0u8; 1];
    stream.read_exact(&mut b).expect("a byte from the peer");
    b[0]
}

/// Waits for the child, killing it after `WAIT`; panics unless it exits successfully.
fn reap(mut child: Child, case: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        match child.try_wait().expect("try_wait") {
            Some(status) => {
                assert!(status.success(), "the {case} child failed: {status}");
                return;
            }
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the {case} child did not finish within {WAIT:?}");
            }
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// Runs `case` as a child process; `share` sends the memory over the connected socket.
fn with_child(case: &str, share: impl FnOnce(&UnixStream), check: impl FnOnce()) {
    let path: PathBuf =
        std::env::temp_dir().join(format!("iris-cuda-ipc-{}-{case}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let mut child = Some(
        Command::new(std::env::current_exe().expect("current_exe"))
            .args([
                "ipc_child_role",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ROLE, case)
            .env(SOCKET, &path)
            .env(BYTES_VAR, BYTES.to_string())
            .stdin(Stdio::null())
            .spawn()
            .expect("spawning the child"),
    );
    let deadline = Instant::now() + WAIT;
    let mut conn = loop {
        match listener.accept() {
            Ok((conn, _)) => break conn,
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {
                if let Some(c) = child.as_mut() {
                    if let Some(status) = c.try_wait().expect("try_wait") {
                        panic!("the {case} child exited before connecting: {status}");
                    }
                }
                assert!(
                    Instant::now() < deadline,
                    "the {case} child never connected"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(err) => panic!("accept: {err}"),
        }
    };
    let _ = std::fs::remove_file(&path);
    conn.set_nonblocking(false).expect("blocking");
    conn.set_read_timeout(Some(WAIT)).expect("timeout");
    share(&conn);
    assert_eq!(
        byte(&mut conn),
        b'W',
        "the {case} child did not report its write"
    );
    check();
    conn.write_all(b"A").expect("ack");
    if let Some(c) = child.take() {
        reap(c, case);
    }
}

fn parent_case(case: &str, api: SharedApi, as_fd: bool) {
    let Some(device) = cuda_device() else { return };
    let stream = device.create_stream().expect("stream");
    let addr = if api == SharedApi::Vmm {
        // the trait's own choice, which on a device with VMM support is VMM
        match device.shared_api() {
            Ok(SharedApi::Vmm) => {}
            other => {
                eprintln!("skipped: {case}: this device's shared-memory API is {other:?}");
                return;
            }
        }
        device
            .alloc_exportable(BYTES, MemoryKind::Symmetric)
            .expect("alloc_exportable")
    } else {
        device
            .alloc_exportable_with(BYTES, api)
            .expect("alloc_exportable_with")
    };
    fill(&device, &*stream, addr, PARENT_BYTE, BYTES);
    let expected = pattern(case);
    with_child(
        case,
        |conn| {
            if as_fd {
                let fd = device.export_fd(addr).expect("export_fd");
                let kind = rustix::fs::fstat(&fd)
                    .map(|st| rustix::fs::FileType::from_raw_mode(st.st_mode));
                eprintln!("{case}: exported as a descriptor of type {kind:?}");
                send(conn, &(BYTES as u64).to_le_bytes(), Some(fd.as_fd()));
                // the allocation stays valid with the descriptor closed here
            } else {
                let handle = device.ipc_handle(addr).expect("ipc_handle");
                send(conn, &handle, None);
            }
        },
        || {
            let seen = read(&device, &*stream, addr, BYTES);
            assert!(
                seen == expected,
                "{case}: the parent does not see the child's write"
            );
        },
    );
    // SAFETY: the stream's work is done and the child has unmapped.
    unsafe { device.free_shared(addr) }.expect("free_shared");
    eprintln!("{case}: the child's write through its mapping is seen by the parent");
}

#[test]
fn vmm_fd_shared_with_a_child_process() {
    parent_case("vmm-fd", SharedApi::Vmm, true);
}

#[test]
fn ipc_handle_in_a_memfd_shared_with_a_child_process() {
    parent_case("ipc-fd", SharedApi::Ipc, true);
}

#[test]
fn ipc_handle_bytes_shared_with_a_child_process() {
    parent_case("ipc-bytes", SharedApi::Ipc, false);
}

/// The child's part: a no-op unless the parent spawned this binary with `IRIS_CUDA_IPC_ROLE`.
#[test]
fn ipc_child_role() {
    let Ok(case) = std::env::var(ROLE) else {
        return;
    };
    let path = std::env::var(SOCKET).expect("socket path");
    let bytes: usize = std::env::var(BYTES_VAR)
        .expect("bytes")
        .parse()
        .expect("bytes");
    let device = cuda_device().expect("the child opens CUDA where the parent did");
    let stream = device.create_stream().expect("stream");
    let mut conn = UnixStream::connect(&path).expect("connect");
    conn.set_read_timeout(Some(WAIT)).expect("timeout");
    let (payload, fd) = receive(&conn, 256);
    let addr = match case.as_str() {
        "ipc-bytes" => {
            let handle: [u8; IPC_HANDLE_BYTES] = payload.as_slice().try_into().expect("64 bytes");
            device.open_ipc_handle(&handle).expect("open_ipc_handle")
        }
        _ => {
            let fd = fd.expect("a descriptor with the message");
            let sent = u64::from_le_bytes(payload.as_slice().try_into().expect("8 bytes"));
            assert_eq!(sent as usize, bytes);
            device
                .import_fd(fd.as_fd(), bytes, MemoryKind::Symmetric)
                .expect("import_fd")
            // the descriptor closes here; the mapping stays
        }
    };
    let seen = read(&device, &*stream, addr, bytes);
    assert!(
        seen.iter().all(|&b| b == PARENT_BYTE),
        "{case}: the child does not see the parent's bytes"
    );
    write(&device, &*stream, addr, &pattern(&case));
    conn.write_all(b"W").expect("report");
    assert_eq!(byte(&mut conn), b'A', "the parent's ack");
    // SAFETY: the stream's work is done.
    unsafe { device.free_shared(addr) }.expect("free_shared");
}

/// Importing within the exporting process: a VMM export maps the same memory at a second
/// address; a legacy export gives back the allocation's own address, counted.
#[test]
fn imports_within_one_process() {
    let Some(device) = cuda_device() else { return };
    let stream = device.create_stream().expect("stream");
    for api in [SharedApi::Vmm, SharedApi::Ipc] {
        let addr = device.alloc_exportable_with(BYTES, api).expect("alloc");
        let fd = device.export_fd(addr).expect("export_fd");
        let second = device
            .import_fd(fd.as_fd(), BYTES, MemoryKind::Device)
            .expect("import_fd");
        drop(fd);
        assert_eq!(api == SharedApi::Ipc, second == addr, "{api:?}");
        let data = pattern("same-process");
        write(&device, &*stream, addr, &data);
        assert!(read(&device, &*stream, second, BYTES) == data, "{api:?}");
        // SAFETY: nothing uses either address afterwards.
        unsafe {
            device.free_shared(second).expect("free the import");
            device.free_shared(addr).expect("free the allocation");
        }
        // SAFETY: as above: freeing again is an error, not a crash.
        assert!(unsafe { device.free_shared(addr) }.is_err());
    }
    assert!(device.supports_shared_memory());
    // an address that is not an exportable allocation cannot be exported
    let plain = device.alloc(4096, MemoryKind::Device).expect("alloc");
    assert!(device.export_fd(plain).is_err());
    // SAFETY: unused afterwards.
    unsafe { device.free(plain) }.expect("free");
    eprintln!("same-process imports: ok");
}
