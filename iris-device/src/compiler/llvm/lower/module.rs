//! The unit-level parts of an LLVM module: header, globals, declarations, helpers,
//! attribute groups and metadata, and the assembly of the final text.

use super::arch::Arch;
use super::helpers::Helper;
use super::types;
use crate::abi::TargetKind;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// Attribute group of kernel entry points.
pub(super) const ATTR_KERNEL: &str = "#0";
/// Attribute group of device functions and helpers.
pub(super) const ATTR_FUNCTION: &str = "#1";
/// Attribute group of kernel bodies (called once, from the entry point).
pub(super) const ATTR_BODY: &str = "#2";
/// The empty metadata node `!invariant.load` refers to.
pub(super) const INVARIANT: &str = "!0";
/// `!{!"llvm.loop.unroll.full"}`, which the loops that must be unrolled point to.
const UNROLL_FULL: &str = "!2";
/// The first number of the loops' own (distinct) metadata nodes.
const FIRST_LOOP_NODE: u32 = 100;

/// What the functions of a module share: the target, and what they ask the module to hold.
pub(super) struct ModuleCtx {
    /// The target.
    pub arch: Arch,
    declarations: BTreeMap<String, String>,
    globals: Vec<String>,
    helpers: BTreeSet<Helper>,
    /// Whether any `half`/`bfloat` value was lowered (the CPU then needs conversions).
    pub uses_half: bool,
    /// Whether symmetric translations check the peer (the unit was built with peer
    /// checks).
    pub peer_checks: bool,
    /// Whether every function takes the trace's hidden arguments (`Unit::trace_param`).
    pub trace: bool,
    /// How many loops carry `llvm.loop.unroll.full`.
    unrolled_loops: u32,
    /// Kernels whose block bound is `!nvvm.annotations` metadata, with the bound.
    maxntid: Vec<(String, u32)>,
}

impl ModuleCtx {
    /// An empty module for `arch`, whose symmetric translations check the peer when
    /// `peer_checks` is set.
    pub fn new(arch: Arch, peer_checks: bool) -> Self {
        ModuleCtx {
            arch,
            declarations: BTreeMap::new(),
            globals: Vec::new(),
            helpers: BTreeSet::new(),
            uses_half: false,
            peer_checks,
            trace: false,
            unrolled_loops: 0,
            maxntid: Vec::new(),
        }
    }

    /// A new loop metadata node asking for full unrolling, for the loop's back edge
    /// (`br label %head, !llvm.loop !N`).
    pub fn unroll_full_loop(&mut self) -> String {
        let id = FIRST_LOOP_NODE + self.unrolled_loops;
        self.unrolled_loops += 1;
        format!("!{id}")
    }

    /// Records kernel `name`'s block bound `n` as `!nvvm.annotations` metadata.
    pub fn annotate_maxntid(&mut self, name: &str, n: u32) {
        self.maxntid.push((name.to_string(), n));
    }

    /// Declares an external function (an LLVM intrinsic) once: `ret @name(params)`.
    pub fn declare(&mut self, name: &str, ret: &str, params: &str) {
        self.declarations
            .entry(name.to_string())
            .or_insert_with(|| format!("declare {ret} @{name}({params})"));
    }

    /// Adds a global variable definition.
    pub fn global(&mut self, text: String) {
        self.globals.push(text);
    }

    /// Declares the launch's dynamic shared block, aligned to `align` (once per module).
    pub fn dynamic_shared(&mut self, align: u64) {
        let decl = format!(
            "{} = external addrspace(3) global [0 x i8], align {align}",
            super::shared::DYNAMIC_SHARED,
        );
        if !self.globals.contains(&decl) {
            self.globals.push(decl);
        }
    }

    /// Asks for a helper function to be defined; returns its symbol.
    pub fn helper(&mut self, helper: Helper) -> String {
        let name = helper.symbol();
        self.helpers.insert(helper);
        name
    }

    /// Assembles the module text from the lowered function definitions.
    pub fn finish(mut self, unit_name: &str, functions: &[String]) -> String {
        if self.arch.kind() == TargetKind::Cpu && self.uses_half {
            for h in Helper::CPU_HALF_CONVERSIONS {
                self.helpers.insert(h);
            }
        }
        let mut out = String::new();
        let name = unit_name.replace(['"', '\\'], "_");
        let _ = writeln!(out, "; ModuleID = '{name}'");
        let _ = writeln!(out, "source_filename = \"{name}\"");
        let _ = writeln!(out, "target datalayout = \"{}\"", self.arch.datalayout());
        let _ = writeln!(out, "target triple = \"{}\"\n", self.arch.target.triple());
        for g in &self.globals {
            let _ = writeln!(out, "{g}");
        }
        if !self.globals.is_empty() {
            out.push('\n');
        }
        for f in functions {
            let _ = writeln!(out, "{f}");
        }
        let helpers: Vec<Helper> = self.helpers.iter().copied().collect();
        for h in helpers {
            let _ = writeln!(out, "{}", h.definition(&mut self));
        }
        for d in self.declarations.values() {
            let _ = writeln!(out, "{d}");
        }
        out.push('\n');
        // The block-size bound of each kernel is an attribute of its own definition.
        let _ = writeln!(
            out,
            "attributes {ATTR_KERNEL} = {{ nounwind \"no-builtins\" }}"
        );
        let _ = writeln!(
            out,
            "attributes {ATTR_FUNCTION} = {{ nounwind \"no-builtins\" }}"
        );
        let _ = writeln!(
            out,
            "attributes {ATTR_BODY} = {{ alwaysinline nounwind \"no-builtins\" }}\n"
        );
        let _ = writeln!(out, "{INVARIANT} = !{{}}");
        if self.unrolled_loops > 0 {
            let _ = writeln!(out, "{UNROLL_FULL} = !{{!\"llvm.loop.unroll.full\"}}");
            for i in 0..self.unrolled_loops {
                let id = FIRST_LOOP_NODE + i;
                let _ = writeln!(out, "!{id} = distinct !{{!{id}, {UNROLL_FULL}}}");
            }
        }
        match self.arch.kind() {
            TargetKind::Amdgpu => {
                let _ = writeln!(out, "!llvm.module.flags = !{{!1}}");
                let _ = writeln!(
                    out,
                    "!1 = !{{i32 1, !\"amdhsa_code_object_version\", i32 500}}"
                );
            }
            TargetKind::Cpu => {
                let _ = writeln!(out, "!llvm.module.flags = !{{!1}}");
                let _ = writeln!(out, "!1 = !{{i32 8, !\"PIC Level\", i32 2}}");
            }
            TargetKind::Nvptx if !self.maxntid.is_empty() => {
                let first = FIRST_LOOP_NODE + self.unrolled_loops;
                let nodes: Vec<String> = (0..self.maxntid.len())
                    .map(|i| format!("!{}", first + i as u32))
                    .collect();
                let _ = writeln!(out, "!nvvm.annotations = !{{{}}}", nodes.join(", "));
                for (i, (name, n)) in self.maxntid.iter().enumerate() {
                    let _ = writeln!(
                        out,
                        "!{} = !{{ptr {}, !\"maxntidx\", i32 {n}}}",
                        first + i as u32,
                        types::global_name(name)
                    );
                }
            }
            TargetKind::Nvptx => {}
        }
        out
    }
}
