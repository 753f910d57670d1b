//! The macro under arbitrary input: every kernel of the examples and tests, mutated at
//! random (tokens deleted, duplicated, swapped, replaced, groups emptied), goes through the
//! whole expansion (parse, check, lower, LLVM for the CPU target). It must never panic: every
//! input ends in code or in `compile_error!`s with spans.
//!
//! Runs for `IRIS_FUZZ_SECS` seconds (default 20) and prints how many inputs ran.

use crate::expand;
use iris_device::compiler::Target;
use proc_macro2::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};
use std::path::Path;
use std::time::{Duration, Instant};

/// A small deterministic generator (xorshift64*), seeded per run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const IDENTS: &[&str] = &[
    "u32",
    "u64",
    "i32",
    "f32",
    "f16",
    "bf16",
    "bool",
    "usize",
    "f32x4",
    "Symmetric",
    "iris",
    "store",
    "load",
    "atomic_add",
    "atomic_cas",
    "Ordering",
    "Scope",
    "System",
    "Acquire",
    "sync_threads",
    "shared_array",
    "thread_idx_x",
    "let",
    "mut",
    "if",
    "else",
    "while",
    "loop",
    "for",
    "in",
    "break",
    "continue",
    "return",
    "unsafe",
    "fn",
    "as",
    "match",
    "self",
    "Self",
    "struct",
    "impl",
    "x",
    "n",
    "peer",
    "add",
    "cast",
    "local",
    "MAX",
    "sqrt",
    "get",
    "new",
    "copy",
    "put",
    "fence",
    "kernel",
    "mod",
    "pub",
    "const",
    "static",
    "move",
];
const PUNCTS: &[char] = &[
    '+', '-', '*', '/', '%', '^', '!', '&', '|', '=', '<', '>', '.', ',', ';', ':', '#', '?', '@',
    '~', '$',
];

fn random_token(rng: &mut Rng) -> TokenTree {
    match rng.below(6) {
        0 | 1 => TokenTree::Ident(Ident::new(
            IDENTS[rng.below(IDENTS.len())],
            Span::call_site(),
        )),
        2 => TokenTree::Punct(Punct::new(
            PUNCTS[rng.below(PUNCTS.len())],
            if rng.below(2) == 0 {
                Spacing::Alone
            } else {
                Spacing::Joint
            },
        )),
        3 => TokenTree::Literal(match rng.below(6) {
            0 => Literal::u32_suffixed(rng.next() as u32),
            1 => Literal::i64_unsuffixed(rng.next() as i64),
            2 => Literal::f32_unsuffixed((rng.next() % 1000) as f32 / 7.0),
            3 => Literal::u128_unsuffixed(u128::MAX),
            4 => Literal::string("s"),
            _ => Literal::u8_suffixed(255),
        }),
        4 => TokenTree::Group(Group::new(
            [
                Delimiter::Parenthesis,
                Delimiter::Brace,
                Delimiter::Bracket,
                Delimiter::None,
            ][rng.below(4)],
            TokenStream::new(),
        )),
        _ => TokenTree::Literal(Literal::usize_unsuffixed(rng.below(300))),
    }
}

/// One random edit somewhere in the tree.
fn mutate(ts: TokenStream, rng: &mut Rng, depth: usize) -> TokenStream {
    let mut tokens: Vec<TokenTree> = ts.into_iter().collect();
    let groups: Vec<usize> = tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| matches!(t, TokenTree::Group(_)))
        .map(|(i, _)| i)
        .collect();
    if !groups.is_empty() && depth < 12 && rng.below(3) > 0 {
        let i = groups[rng.below(groups.len())];
        if let TokenTree::Group(g) = &tokens[i] {
            let mut ng = Group::new(g.delimiter(), mutate(g.stream(), rng, depth + 1));
            ng.set_span(g.span());
            tokens[i] = TokenTree::Group(ng);
        }
        return tokens.into_iter().collect();
    }
    let n = tokens.len();
    match rng.below(7) {
        0 if n > 0 => {
            tokens.remove(rng.below(n));
        }
        1 if n > 0 => {
            let i = rng.below(n);
            let t = tokens[i].clone();
            tokens.insert(i, t);
        }
        2 if n > 1 => {
            let i = rng.below(n - 1);
            tokens.swap(i, i + 1);
        }
        3 if n > 0 => {
            let i = rng.below(n);
            tokens[i] = random_token(rng);
        }
        4 => {
            let i = rng.below(n + 1);
            tokens.insert(i, random_token(rng));
        }
        5 if n > 0 => {
            let i = rng.below(n);
            if let TokenTree::Group(g) = &tokens[i] {
                tokens[i] = TokenTree::Group(Group::new(g.delimiter(), TokenStream::new()));
            } else {
                tokens.truncate(i);
            }
        }
        _ if n > 2 => {
            let i = rng.below(n);
            let j = rng.below(n);
            tokens.swap(i, j);
        }
        _ => tokens.push(random_token(rng)),
    }
    tokens.into_iter().collect()
}

/// Kernels and kernel modules of the repository's examples and tests, as the macro sees
/// them (the item without its attribute), and whether each is a module.
fn seeds() -> Vec<(TokenStream, bool)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    for dir in ["examples", "tests", "benches"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "rs") {
                let Ok(text) = std::fs::read_to_string(&path) else {
                    continue;
                };
                let Ok(file) = syn::parse_file(&text) else {
                    continue;
                };
                for item in file.items {
                    collect(item, &mut out);
                }
            }
        }
    }
    out
}

fn is_iris_attr(attrs: &[syn::Attribute], name: &str) -> bool {
    attrs
        .iter()
        .any(|a| a.path().segments.last().is_some_and(|s| s.ident == name))
}

fn collect(item: syn::Item, out: &mut Vec<(TokenStream, bool)>) {
    use quote::ToTokens;
    match item {
        syn::Item::Fn(mut f) if is_iris_attr(&f.attrs, "kernel") => {
            f.attrs
                .retain(|a| !is_iris_attr(std::slice::from_ref(a), "kernel"));
            out.push((f.to_token_stream(), false));
        }
        syn::Item::Mod(mut m) if is_iris_attr(&m.attrs, "kernels") => {
            m.attrs
                .retain(|a| !is_iris_attr(std::slice::from_ref(a), "kernels"));
            out.push((m.to_token_stream(), true));
        }
        _ => {}
    }
}

#[test]
fn mutated_kernels_never_panic_the_macro() {
    let seeds = seeds();
    assert!(seeds.len() >= 5, "found only {} seed kernels", seeds.len());
    let secs: u64 = std::env::var("IRIS_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let deadline = Instant::now() + Duration::from_secs(secs);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        | 1;
    let mut rng = Rng(seed);
    expand::TARGETS_OVERRIDE.with(|t| *t.borrow_mut() = Some(vec![Target::Cpu]));
    // Quiet the default hook: a panic is reported by the assertion below, with its input.
    let (mut ran, mut compiled, mut rejected) = (0u64, 0u64, 0u64);
    while Instant::now() < deadline {
        let (base, is_mod) = &seeds[rng.below(seeds.len())];
        let mut ts = base.clone();
        for _ in 0..=rng.below(4) {
            ts = mutate(ts, &mut rng, 0);
        }
        let input = ts.to_string();
        let result = std::panic::catch_unwind(|| {
            if *is_mod {
                expand::kernels(TokenStream::new(), ts)
            } else {
                expand::kernel(TokenStream::new(), ts)
            }
        });
        match result {
            Ok(out) => {
                if out.to_string().contains("compile_error") {
                    rejected += 1;
                } else {
                    compiled += 1;
                }
            }
            Err(_) => panic!("the macro panicked (seed {seed:#x}) on:\n{input}"),
        }
        ran += 1;
    }
    eprintln!("macro fuzz: {ran} inputs in {secs} s ({compiled} compiled, {rejected} rejected with errors), seed {seed:#x}");
    assert!(ran > 0);
}
