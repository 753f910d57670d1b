//! Finding loop bodies in LLVM IR, PTX and AMDGPU disassembly: the lines from a label to
//! a later branch back to it.

#![allow(dead_code)]

/// The loop bodies of a listing: `label(line)` names a line that is a branch target,
/// `targets(line)` names the targets a line branches to.
fn loops(
    text: &str,
    label: impl Fn(&str) -> Option<String>,
    targets: impl Fn(&str) -> Vec<String>,
) -> Vec<Vec<&str>> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        for t in targets(line) {
            if let Some(start) = lines[..=i]
                .iter()
                .position(|l| label(l).as_deref() == Some(&t))
            {
                out.push(lines[start..=i].to_vec());
            }
        }
    }
    out
}

/// Loop bodies of LLVM IR.
pub fn ir_loops(ir: &str) -> Vec<Vec<&str>> {
    loops(
        ir,
        |l| {
            let l = l.split(';').next().unwrap_or("").trim_end();
            (!l.starts_with(' ') && l.ends_with(':')).then(|| l.trim_end_matches(':').to_string())
        },
        |l| {
            let l = l.trim_start();
            if !l.starts_with("br ") {
                return vec![];
            }
            l.split("label %")
                .skip(1)
                .map(|s| s.split([',', ' ']).next().unwrap_or("").to_string())
                .collect()
        },
    )
}

/// Loop bodies of PTX.
pub fn ptx_loops(ptx: &str) -> Vec<Vec<&str>> {
    loops(
        ptx,
        |l| l.trim().strip_suffix(':').map(str::to_string),
        |l| {
            let l = l.trim();
            match l.find("bra") {
                Some(p) if l[..p].trim().is_empty() || l.starts_with('@') => l[p..]
                    .split_whitespace()
                    .nth(1)
                    .map(|t| vec![t.trim_end_matches(';').to_string()])
                    .unwrap_or_default(),
                _ => vec![],
            }
        },
    )
}

/// Loop bodies of `llvm-objdump -d` output for AMDGPU: lines are labelled by their
/// address (`// 000000001694:`), branches name their target as `<func+0x78>`.
pub fn objdump_loops(asm: &str) -> Vec<Vec<&str>> {
    let mut func_start = std::collections::HashMap::new();
    for l in asm.lines() {
        // `0000000000001600 <fill_peer>:`
        if let Some((addr, rest)) = l.split_once(" <") {
            if let (Ok(a), Some(name)) = (
                u64::from_str_radix(addr.trim(), 16),
                rest.strip_suffix(">:"),
            ) {
                func_start.insert(name.to_string(), a);
            }
        }
    }
    loops(
        asm,
        |l| {
            let addr = l.split("// ").nth(1)?.split(':').next()?;
            u64::from_str_radix(addr.trim(), 16)
                .ok()
                .map(|a| a.to_string())
        },
        |l| {
            let Some(t) = l
                .split('<')
                .nth(1)
                .and_then(|s| s.strip_suffix('>').or(s.split('>').next()))
            else {
                return vec![];
            };
            let Some((name, off)) = t.split_once("+0x") else {
                return vec![];
            };
            match (func_start.get(name), u64::from_str_radix(off, 16)) {
                (Some(base), Ok(off)) => vec![(base + off).to_string()],
                _ => vec![],
            }
        },
    )
}
