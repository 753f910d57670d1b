//! A world's abort: once a rank fails (an error, a panic, a timeout), the world's abort
//! word reads non-zero. The word is a [`HostWord`], host memory every device of the
//! process reads while the host writes it (one per world in this process, made with the
//! first rank's context and released when the world ends); every peer table names it,
//! and iris's device waits (signal waits, the collectives' barrier) poll it and give up,
//! so that ranks waiting for the failed one end within milliseconds instead of their wait
//! limit.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use iris_driver::sync::lock;
use iris_driver::{Device, HostWord, Result};

/// The abort of one world, in this process.
#[derive(Debug, Default)]
pub(crate) struct WorldAbort {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Why the world aborted, once it has.
    reason: Option<String>,
    /// The word, once the first rank made it.
    word: Option<HostWord>,
}

impl WorldAbort {
    /// The world's word, made on `device` by the first rank that asks (set at once if
    /// the world has aborted already).
    pub fn word(&self, device: &dyn Device) -> Result<HostWord> {
        let mut state = lock(&self.state);
        if let Some(word) = state.word {
            return Ok(word);
        }
        let word = device.alloc_host_word()?;
        if state.reason.is_some() {
            set(word);
        }
        state.word = Some(word);
        Ok(word)
    }

    /// Raises the abort (the first reason is kept): the word is set now.
    pub fn raise(&self, reason: impl Into<String>) {
        let mut state = lock(&self.state);
        if state.reason.is_none() {
            state.reason = Some(reason.into());
            tracing::debug!(reason = state.reason.as_deref(), "the world aborts");
        }
        if let Some(word) = state.word {
            set(word);
        }
    }

    /// Why the world aborted, if it has.
    pub fn reason(&self) -> Option<String> {
        lock(&self.state).reason.clone()
    }

    /// Releases the word, made on `device`, when the world ends.
    ///
    /// # Safety
    /// No kernel that reads it is queued or running.
    pub unsafe fn release(&self, device: &dyn Device) {
        if let Some(word) = lock(&self.state).word.take() {
            // SAFETY: made by `alloc_host_word` on `device`; nothing reads it (the caller).
            if let Err(err) = unsafe { device.free_host_word(word) } {
                tracing::warn!(%err, "releasing the world's abort word");
            }
        }
    }
}

/// Sets `word`.
fn set(word: HostWord) {
    // SAFETY: a live word (released only when the world ends, under the same lock): host
    // memory holding a u64, 8-byte aligned (an `AtomicU64` there).
    let word = unsafe { &*(word.host as *const AtomicU64) };
    word.store(1, Ordering::SeqCst);
}
