//! Device time: `global_timer_ns`, `clock64` and `nanosleep` on each target.
//!
//! - NVIDIA: `%globaltimer` (nanoseconds), `%clock64`, `nanosleep.u32` (sm_70 and newer).
//! - AMD (gfx9): `s_memrealtime`, a 100 MHz counter every gfx9 device has (HIP's
//!   `wall_clock64`; `hipDeviceAttributeWallClockRate` is 100000 kHz), times 10;
//!   `s_memtime`; `s_sleep` in a loop until the time has passed (`s_sleep` takes only a
//!   constant, about 64 cycles a unit).
//! - CPU: the launch context's `now_ns` and `sleep_ns` functions (the runtime's
//!   `CLOCK_MONOTONIC` and a sleeping thread).
//!
//! None of the reads is `readnone`: LLVM neither merges two reads nor hoists one out of a
//! loop (a codegen test reads the clock twice and finds two reads).

use super::super::super::kernel_ir::Intrinsic;
use super::builder::FnBuilder;
use super::intrinsics::not_in_family;
use crate::abi::TargetKind;

/// Nanoseconds per tick of AMD's `s_memrealtime` counter (100 MHz on gfx9).
const AMD_REALTIME_NS_PER_TICK: u32 = 10;

/// `s_sleep`'s argument in each round of AMD's sleep loop (about 64 cycles a unit).
const AMD_SLEEP_UNITS: u32 = 2;

impl FnBuilder<'_> {
    /// `global_timer_ns()`, `clock64()`, `nanosleep(ns)`, `trace_event(id, value)`.
    pub(super) fn lower_time(&mut self, op: &Intrinsic) -> Result<String, String> {
        match op {
            Intrinsic::GlobalTimerNs => self.global_timer_ns(),
            Intrinsic::Clock64 => self.clock64(),
            Intrinsic::Nanosleep { ns } => {
                let ns = self.expr(ns)?;
                self.nanosleep(&ns)?;
                Ok(String::new())
            }
            Intrinsic::TraceEvent { id, value } => self.trace_event(id, value),
            other => Err(not_in_family(other)),
        }
    }

    /// `global_timer_ns()`.
    pub fn global_timer_ns(&mut self) -> Result<String, String> {
        match self.arch().kind() {
            TargetKind::Nvptx => Ok(self.call_i64("llvm.nvvm.read.ptx.sreg.globaltimer")),
            TargetKind::Amdgpu => Ok(self.amdgpu_realtime_ns()),
            TargetKind::Cpu => self.cpu_now_ns(),
        }
    }

    /// `s_memrealtime` in nanoseconds.
    fn amdgpu_realtime_ns(&mut self) -> String {
        let ticks = self.call_i64("llvm.amdgcn.s.memrealtime");
        self.def(&format!("mul i64 {ticks}, {AMD_REALTIME_NS_PER_TICK}"))
    }

    /// `clock64()`.
    pub fn clock64(&mut self) -> Result<String, String> {
        match self.arch().kind() {
            TargetKind::Nvptx => Ok(self.call_i64("llvm.nvvm.read.ptx.sreg.clock64")),
            TargetKind::Amdgpu => Ok(self.call_i64("llvm.amdgcn.s.memtime")),
            TargetKind::Cpu => self.cpu_now_ns(),
        }
    }

    /// `nanosleep(ns)`, `ns` an `i32` value.
    pub fn nanosleep(&mut self, ns: &str) -> Result<(), String> {
        match self.arch().kind() {
            TargetKind::Nvptx => {
                let name = "llvm.nvvm.nanosleep";
                self.m.declare(name, "void", "i32");
                self.inst(&format!("call void @{name}(i32 {ns})"));
            }
            TargetKind::Amdgpu => self.amdgpu_sleep_until(ns),
            TargetKind::Cpu => self.cpu_sleep_ns(ns)?,
        }
        Ok(())
    }

    /// `start = now; do { s_sleep } while now - start < ns`.
    fn amdgpu_sleep_until(&mut self, ns: &str) {
        let start = self.amdgpu_realtime_ns();
        let wide = self.def(&format!("zext i32 {ns} to i64"));
        let sleep = "llvm.amdgcn.s.sleep";
        self.m.declare(sleep, "void", "i32 immarg");
        let body = self.label("sleep.body");
        let done = self.label("sleep.done");
        self.start_block(&body);
        self.inst(&format!("call void @{sleep}(i32 {AMD_SLEEP_UNITS})"));
        let now = self.amdgpu_realtime_ns();
        let passed = self.def(&format!("sub i64 {now}, {start}"));
        let more = self.def(&format!("icmp ult i64 {passed}, {wide}"));
        self.cond_br(&more, &body, &done);
        self.start_block(&done);
    }

    /// A call of an `i64 ()` intrinsic.
    fn call_i64(&mut self, name: &str) -> String {
        self.m.declare(name, "i64", "");
        self.def(&format!("call i64 @{name}()"))
    }
}
