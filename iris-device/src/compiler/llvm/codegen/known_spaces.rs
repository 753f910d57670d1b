//! NVIDIA before LLVM 22: the address-space tests and conversions that LLVM 22 folds and
//! LLVM 19 to 21 keep, folded on the optimised IR's text, which is then optimised again.
//!
//! The lowering asks at run time whether a generic pointer is block-shared or global
//! (`llvm.nvvm.isspacep.*`, before `cp.async` and `ldmatrix`) and turns a generic pointer
//! into a shared one with `cvta.to.shared` (inline PTX: LLVM 19's own cast aborts in
//! instruction selection on a branch it cannot prove dead). After inlining, most of those
//! pointers are plainly casts of shared or global ones, which LLVM 22's address-space
//! inference sees; LLVM 19 does not fold the test, and the inline PTX hides the cast
//! from it. Left in, each fragment load and asynchronous copy of a GEMM keeps a test, a
//! branch and a fallback path, and every shared address goes through a generic one.
//!
//! Here, per function: a pointer whose definition is a cast from address space `N`
//! (through `getelementptr`s, `phi`s and `select`s, or a constant expression) has a known
//! space; `isspacep.S` of it becomes the constant it is, and `cvta.to.shared` of a known
//! shared pointer becomes an `addrspacecast` (which can no longer meet a global pointer).
//! Nothing else changes; a pointer not proven keeps its test.

use std::collections::{HashMap, HashSet};

/// The deepest chain of definitions followed.
const MAX_DEPTH: u32 = 64;

/// The folded text of `ir` (a whole module) and how many calls were folded.
pub fn fold_known_spaces(ir: &str) -> (String, usize) {
    let mut out = String::with_capacity(ir.len());
    let mut folded = 0;
    let mut function: Vec<&str> = Vec::new();
    let mut inside = false;
    for line in ir.lines() {
        if inside {
            function.push(line);
            if line == "}" {
                folded += fold_function(&function, &mut out);
                function.clear();
                inside = false;
            }
            continue;
        }
        if line.starts_with("define ") && line.ends_with('{') {
            inside = true;
            function.push(line);
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    for line in function {
        out.push_str(line);
        out.push('\n');
    }
    (out, folded)
}

/// Appends `lines` (one function) to `out` with its known tests and conversions folded;
/// returns how many.
fn fold_function(lines: &[&str], out: &mut String) -> usize {
    let defs: HashMap<&str, &str> = lines.iter().filter_map(|l| definition(l)).collect();
    let mut folded = 0;
    for (n, line) in lines.iter().enumerate() {
        match rewrite(line, &defs, n) {
            Some(text) => {
                out.push_str(&text);
                folded += 1;
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    folded
}

/// `%name` and its right-hand side, for an instruction line that defines a value.
fn definition(line: &str) -> Option<(&str, &str)> {
    let t = line.trim_start();
    let (name, rhs) = t.split_once(" = ")?;
    name.starts_with('%').then_some((name, rhs))
}

/// The replacement lines of `line` (line `n` of its function), when it is a test or
/// conversion of a pointer of known space.
fn rewrite(line: &str, defs: &HashMap<&str, &str>, n: usize) -> Option<String> {
    let (name, rhs) = definition(line)?;
    let call = rhs
        .strip_prefix("tail call ")
        .or(rhs.strip_prefix("call "))?;
    if let Some(rest) = call.strip_prefix("i1 @llvm.nvvm.isspacep.") {
        let (space, arg) = rest.split_once('(')?;
        let space = space_number(space)?;
        let known = Provenance::new(defs).operand(call_operand(arg)?)?;
        let value = if known == space { "true" } else { "false" };
        return Some(format!("  {name} = and i1 {value}, {value}\n"));
    }
    let rest = call.strip_prefix("i64 asm \"cvta.to.shared.u64 $0, $1;\", \"=l,l\"(")?;
    let operand = call_operand(rest)?;
    if Provenance::new(defs).operand(operand)? != 3 {
        return None;
    }
    let shared = format!("%iris.shared.{n}");
    Some(format!(
        "  {shared} = addrspacecast ptr {operand} to ptr addrspace(3)\n  {name} = ptrtoint ptr addrspace(3) {shared} to i64\n"
    ))
}

/// The number of the address space PTX's `isspacep` names.
fn space_number(name: &str) -> Option<u32> {
    match name {
        "global" => Some(1),
        "shared" => Some(3),
        "const" => Some(4),
        "local" => Some(5),
        _ => None,
    }
}

/// The pointer operand of a call's one-argument list (`ptr [attrs] VALUE) [#N]`), without
/// the type and attributes.
fn call_operand(args: &str) -> Option<&str> {
    let end = args.rfind(')')?;
    let mut v = args[..end].trim().strip_prefix("ptr ")?;
    for attr in ["nonnull ", "noundef "] {
        v = v.strip_prefix(attr).unwrap_or(v);
    }
    Some(v.trim())
}

/// What is known of a pointer's space: a space, or nothing yet (a `phi` on its own cycle).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Space {
    Known(u32),
    Pending,
}

/// Follows pointers' definitions within one function.
struct Provenance<'f, 'a> {
    /// Each value's defining instruction.
    defs: &'f HashMap<&'a str, &'a str>,
    /// The values whose space is being found (a `phi` cycle meets one again).
    visiting: HashSet<&'a str>,
}

impl<'f, 'a> Provenance<'f, 'a> {
    fn new(defs: &'f HashMap<&'a str, &'a str>) -> Self {
        Self {
            defs,
            visiting: HashSet::new(),
        }
    }

    /// The address space `value` (a `ptr` operand's text) provably points into.
    fn operand(&mut self, value: &'a str) -> Option<u32> {
        match self.space(value, 0)? {
            Space::Known(n) => Some(n),
            Space::Pending => None,
        }
    }

    fn space(&mut self, value: &'a str, depth: u32) -> Option<Space> {
        if depth > MAX_DEPTH {
            return None;
        }
        let value = value.trim();
        if value.starts_with('%') {
            let name = value.split([' ', ',', ')']).next()?;
            if self.visiting.contains(name) {
                return Some(Space::Pending);
            }
            let rhs = *self.defs.get(name)?;
            self.visiting.insert(name);
            let found = self.definition(rhs, depth + 1);
            self.visiting.remove(name);
            return found;
        }
        // Constant expressions.
        if let Some(rest) = value.strip_prefix("addrspacecast (ptr addrspace(") {
            return cast_from(rest);
        }
        if value.starts_with("getelementptr") {
            let (_, base) = value.split_once(", ptr ")?;
            return self.space(base, depth + 1);
        }
        None
    }

    /// The space of the value an instruction `rhs` defines.
    fn definition(&mut self, rhs: &'a str, depth: u32) -> Option<Space> {
        if let Some(rest) = rhs.strip_prefix("addrspacecast ptr addrspace(") {
            return rhs.ends_with(" to ptr").then(|| cast_from(rest)).flatten();
        }
        if rhs.starts_with("getelementptr ") {
            let (_, base) = rhs.split_once(", ptr ")?;
            return self.space(base, depth);
        }
        if let Some(rest) = rhs.strip_prefix("phi ptr ") {
            let incoming = rest
                .split("], [")
                .map(|arm| arm.trim_matches(|c| c == '[' || c == ']' || c == ' '))
                .map(|arm| arm.split(',').next().unwrap_or(""));
            return self.merge(incoming, depth);
        }
        if let Some(rest) = rhs.strip_prefix("select i1 ") {
            return self.merge(rest.split(", ptr ").skip(1), depth);
        }
        None
    }

    /// One space for all of `values` (those on a cycle through the value asked about do
    /// not count), or nothing.
    fn merge(&mut self, values: impl Iterator<Item = &'a str>, depth: u32) -> Option<Space> {
        let mut known = None;
        for v in values {
            match self.space(v, depth)? {
                Space::Pending => {}
                Space::Known(n) if known.is_none_or(|k| k == n) => known = Some(n),
                Space::Known(_) => return None,
            }
        }
        Some(known.map_or(Space::Pending, Space::Known))
    }
}

/// `N) ...` after `addrspace(`, when the cast is to a generic pointer.
fn cast_from(rest: &str) -> Option<Space> {
    let (n, _) = rest.split_once(')')?;
    n.parse().ok().map(Space::Known)
}

#[cfg(test)]
mod tests {
    use super::*;

    const IR: &str = r#"declare i1 @llvm.nvvm.isspacep.shared(ptr)
define void @k(ptr addrspace(1) %g, ptr %unknown, i1 %c) {
entry:
  %s = getelementptr i8, ptr addrspace(3) @a, i64 16
  %p = addrspacecast ptr addrspace(3) %s to ptr
  %q = getelementptr bfloat, ptr %p, i64 8
  %h = addrspacecast ptr addrspace(1) %g to ptr
  br label %loop
loop:
  %r = phi ptr [ %q, %entry ], [ %r.next, %loop ]
  %r.next = getelementptr i8, ptr %r, i64 64
  %sel = select i1 %c, ptr %h, ptr %p
  %t1 = tail call i1 @llvm.nvvm.isspacep.shared(ptr %r)
  %t2 = tail call i1 @llvm.nvvm.isspacep.global(ptr %h)
  %t3 = tail call i1 @llvm.nvvm.isspacep.shared(ptr %h)
  %t4 = tail call i1 @llvm.nvvm.isspacep.shared(ptr %unknown)
  %t5 = tail call i1 @llvm.nvvm.isspacep.shared(ptr %sel)
  %t6 = tail call i64 asm "cvta.to.shared.u64 $0, $1;", "=l,l"(ptr nonnull %q) #3
  %t7 = tail call i64 asm "cvta.to.shared.u64 $0, $1;", "=l,l"(ptr %unknown) #3
  %t8 = tail call i64 asm "cvta.to.shared.u64 $0, $1;", "=l,l"(ptr getelementptr (i8, ptr addrspacecast (ptr addrspace(3) @b to ptr), i64 8)) #3
  br i1 %c, label %loop, label %done
done:
  ret void
}
"#;

    #[test]
    fn known_spaces_fold_and_unknown_ones_stay() {
        let (out, folded) = fold_known_spaces(IR);
        assert_eq!(folded, 5, "{out}");
        assert!(out.contains("  %t1 = and i1 true, true"), "{out}");
        assert!(out.contains("  %t2 = and i1 true, true"), "{out}");
        assert!(out.contains("  %t3 = and i1 false, false"), "{out}");
        assert!(out.contains("%t4 = tail call i1 @llvm.nvvm.isspacep.shared(ptr %unknown)"));
        // A select of a global and a shared pointer: not known.
        assert!(out.contains("%t5 = tail call i1 @llvm.nvvm.isspacep.shared(ptr %sel)"));
        assert!(
            out.contains("= addrspacecast ptr %q to ptr addrspace(3)\n  %t6 = ptrtoint"),
            "{out}"
        );
        assert!(out.contains("\"=l,l\"(ptr %unknown)"));
        assert!(out.contains(
            "= addrspacecast ptr getelementptr (i8, ptr addrspacecast (ptr addrspace(3) @b to ptr), i64 8) to ptr addrspace(3)"
        ));
        // Everything else as it was.
        assert_eq!(out.lines().count(), IR.lines().count() + 2);
    }

    #[test]
    fn a_module_without_tests_is_unchanged() {
        let ir = "define void @k() {\nentry:\n  ret void\n}\n";
        assert_eq!(fold_known_spaces(ir), (ir.to_string(), 0));
    }
}
