//! SHMEM engines (NVSHMEM, rocSHMEM) seen from the host: which library, its entry
//! points and struct layouts (the `engine` module), and finding, loading and calling its
//! host library at run time (the `library` module). Starting an engine over iris's
//! rendezvous and allocating from it is the SHMEM provider's, in `iris-host`.

mod engine;
mod library;

pub use engine::{AbiLayout, EntryPoints, ShmemEngine};
pub use library::{load, LibrarySearch, ShmemLibrary};
