//! No crate of the workspace has a circle between its files (issue 23): if `a.rs` names an
//! item of `b.rs`, nothing `b.rs` names leads back to `a.rs`. Read from the sources of every
//! crate under `crates/`: each `crate::`, `super::`, `self::` or child-module path outside a
//! file's unit tests and comments, `use` groups included, is an edge from its file to the file
//! that defines the item. A name re-exported by a `pub use` (the crate root's, a folder's
//! `mod.rs`) leads to the file that defines it, and the `pub use` itself is no edge: a root
//! that only re-exports is no room of its own. This lives here, in the crate every binary
//! shares, as the check of the whole workspace's layout.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module of a crate by its path below the root (`[]` is lib.rs, `["trace", "merge"]` is
/// trace/merge.rs).
type Module = Vec<String>;

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
}

/// The code of a file without its unit tests, comments, strings and character literals.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    let mut out = String::with_capacity(text.len());
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'"' => {
                // A raw string's hashes are not told apart: paths inside strings are rare
                // enough, and a missed one only hides an edge of a string.
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            b'\'' if b.get(i + 2) == Some(&b'\'') || b.get(i + 1) == Some(&b'\\') => {
                // A character literal ('x', '\n'); a lifetime ('a) is left alone.
                i += 1;
                while i < b.len() && b[i] != b'\'' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            c => {
                out.push(c as char);
                i += 1;
            }
        }
    }
    out
}

fn tokens(code: &str) -> Vec<Tok> {
    let mut t = Vec::new();
    let c: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < c.len() {
        if c[i].is_alphanumeric() || c[i] == '_' {
            let s = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            t.push(Tok::Ident(c[s..i].iter().collect()));
        } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
            t.push(Tok::Path);
            i += 2;
        } else {
            if !c[i].is_whitespace() {
                t.push(Tok::Punct(c[i]));
            }
            i += 1;
        }
    }
    t
}

/// A path at `t[*i]` (an identifier not after `::`): its segments, each `use` group spread
/// into one path per member, with the name a `pub use` gives it (`as`).
fn paths_at(t: &[Tok], i: &mut usize) -> Vec<(Vec<String>, String)> {
    let mut segs = Vec::new();
    while let Some(Tok::Ident(s)) = t.get(*i) {
        segs.push(s.clone());
        *i += 1;
        if t.get(*i) != Some(&Tok::Path) {
            break;
        }
        *i += 1;
    }
    if t.get(*i) == Some(&Tok::Punct('{')) && t.get(*i - 1) == Some(&Tok::Path) {
        *i += 1;
        let mut all = Vec::new();
        while *i < t.len() && t[*i] != Tok::Punct('}') {
            if let Tok::Ident(_) = t[*i] {
                for (p, name) in paths_at(t, i) {
                    let mut full = segs.clone();
                    full.extend(p.into_iter().filter(|s| s != "self"));
                    all.push((full, name));
                }
            } else {
                *i += 1;
            }
        }
        *i += 1;
        return all;
    }
    let mut name = segs.last().cloned().unwrap_or_default();
    if t.get(*i) == Some(&Tok::Ident("as".into())) {
        if let Some(Tok::Ident(a)) = t.get(*i + 1) {
            name = a.clone();
            *i += 2;
        }
    }
    vec![(segs, name)]
}

struct Crate {
    name: String,
    /// Module -> the code of its file.
    code: BTreeMap<Module, String>,
}

fn crates() -> Vec<Crate> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&root).unwrap() {
        let dir = e.unwrap().path();
        let src = dir.join("src");
        if !src.is_dir() {
            continue;
        }
        let mut code = BTreeMap::new();
        let mut todo: Vec<PathBuf> = vec![src.clone()];
        while let Some(d) = todo.pop() {
            for f in std::fs::read_dir(&d).unwrap() {
                let p = f.unwrap().path();
                if p.is_dir() {
                    todo.push(p);
                    continue;
                }
                if p.extension().is_none_or(|x| x != "rs") {
                    continue;
                }
                let rel = p.strip_prefix(&src).unwrap().with_extension("");
                let mut m: Module = rel.iter().map(|s| s.to_string_lossy().into()).collect();
                if m.last().is_some_and(|s| s == "mod") || m == ["lib"] {
                    m.pop();
                }
                if m == ["main"] {
                    m = vec!["<main>".into()];
                }
                code.insert(m, code_of(&std::fs::read_to_string(&p).unwrap()));
            }
        }
        let name = dir.file_name().unwrap().to_string_lossy().into();
        out.push(Crate { name, code });
    }
    out
}

impl Crate {
    /// The module a path starting at `base` names: the longest module prefix, then through
    /// the re-exports of the module reached.
    fn resolve(
        &self,
        base: &Module,
        segs: &[String],
        reexports: &BTreeMap<(Module, String), Module>,
    ) -> Module {
        let mut m = base.clone();
        let mut rest = segs;
        for _ in 0..8 {
            while let Some((s, r)) = rest.split_first() {
                let mut next = m.clone();
                next.push(s.clone());
                if !self.code.contains_key(&next) {
                    break;
                }
                m = next;
                rest = r;
            }
            match rest
                .first()
                .and_then(|s| reexports.get(&(m.clone(), s.clone())))
            {
                Some(to) if *to != m => {
                    m = to.clone();
                    rest = &rest[1..];
                }
                _ => break,
            }
        }
        m
    }

    /// The start of a path in module `m`, or None if it does not start in this crate.
    fn base(&self, m: &Module, first: &str) -> Option<Module> {
        match first {
            "crate" => Some(Vec::new()),
            "self" => Some(m.clone()),
            "super" => Some(m[..m.len().saturating_sub(1)].to_vec()),
            child => {
                let mut c = m.clone();
                c.push(child.to_string());
                self.code.contains_key(&c).then_some(c)
            }
        }
    }

    /// Each path of each file: (module, path start, rest of the path, its name, in a `pub use`).
    fn paths(&self) -> Vec<(Module, Module, Vec<String>, String, bool)> {
        let mut out = Vec::new();
        for (m, code) in &self.code {
            let t = tokens(code);
            let mut i = 0;
            // Inside a `pub use ...;` (`pub(crate) use` included).
            let mut pub_use = false;
            while i < t.len() {
                if t[i] == Tok::Ident("pub".into()) {
                    let mut j = i + 1;
                    if t.get(j) == Some(&Tok::Punct('(')) {
                        while j < t.len() && t[j] != Tok::Punct(')') {
                            j += 1;
                        }
                        j += 1;
                    }
                    if t.get(j) == Some(&Tok::Ident("use".into())) {
                        pub_use = true;
                        i = j + 1;
                        continue;
                    }
                    // A visibility (`pub(in crate::x)`) names no item.
                    i = j;
                    continue;
                }
                if t[i] == Tok::Punct(';') {
                    pub_use = false;
                }
                let after_path = i > 0 && t[i - 1] == Tok::Path;
                if let Tok::Ident(first) = &t[i] {
                    if !after_path && t.get(i + 1) == Some(&Tok::Path) {
                        let base = self.base(m, first);
                        for (p, name) in paths_at(&t, &mut i) {
                            let Some(mut b) = base.clone() else { continue };
                            let mut segs = &p[1..];
                            while segs.first().is_some_and(|s| s == "super") {
                                b.pop();
                                segs = &segs[1..];
                            }
                            out.push((m.clone(), b, segs.to_vec(), name, pub_use));
                        }
                        continue;
                    }
                }
                i += 1;
            }
        }
        out
    }

    /// Module -> the modules it names.
    fn edges(&self) -> BTreeMap<Module, BTreeSet<Module>> {
        let paths = self.paths();
        let mut reexports = BTreeMap::new();
        // Re-exports of re-exports resolve once the first level is known.
        for _ in 0..3 {
            for (m, base, segs, name, pub_use) in &paths {
                if *pub_use {
                    let to = self.resolve(base, segs, &reexports);
                    if to != *m {
                        reexports.insert((m.clone(), name.clone()), to);
                    }
                }
            }
        }
        let mut g: BTreeMap<Module, BTreeSet<Module>> = self
            .code
            .keys()
            .map(|m| (m.clone(), BTreeSet::new()))
            .collect();
        for (m, base, segs, _, pub_use) in &paths {
            let to = self.resolve(base, segs, &reexports);
            if !pub_use && to != *m {
                g.get_mut(m).unwrap().insert(to);
            }
        }
        g
    }
}

/// A path from `from` back to itself, if any.
fn circle(g: &BTreeMap<Module, BTreeSet<Module>>, from: &Module) -> Option<Vec<Module>> {
    let mut stack = vec![vec![from.clone()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = stack.pop() {
        for next in &g[path.last().unwrap()] {
            let mut p = path.clone();
            p.push(next.clone());
            if next == from {
                return Some(p);
            }
            if seen.insert(next.clone()) {
                stack.push(p);
            }
        }
    }
    None
}

fn file(m: &Module) -> String {
    if m.is_empty() {
        "lib".into()
    } else {
        m.join("/")
    }
}

#[test]
fn no_crate_has_a_circle_between_its_files() {
    let crates = crates();
    assert!(crates.len() >= 8, "the crates were not found");
    let mut circles = Vec::new();
    for c in &crates {
        let g = c.edges();
        for m in g.keys() {
            if let Some(p) = circle(&g, m) {
                let p: Vec<String> = p.iter().map(file).collect();
                circles.push(format!("{}: {}", c.name, p.join(" -> ")));
            }
        }
    }
    assert!(circles.is_empty(), "circles:\n{}", circles.join("\n"));
}

/// The reader finds the imports it must: if it missed some, it would miss circles too.
#[test]
fn the_reader_sees_known_imports() {
    let crates = crates();
    let edges = |name: &str| {
        crates
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no crate {name}"))
            .edges()
    };
    let m = |s: &str| -> Module {
        s.split('/')
            .filter(|x| !x.is_empty())
            .map(String::from)
            .collect()
    };
    let f = edges("grtrace-format");
    // `use crate::abi::{self, event_off, ...}`, a group with `self`.
    assert!(f[&m("encode")].contains(&m("abi")), "{:?}", f[&m("encode")]);
    // `use super::{...}` in a folder's file, to a name its mod.rs re-exports from a sibling.
    assert!(f[&m("trace/merge")]
        .iter()
        .any(|t| t.starts_with(&m("trace"))));
    let r = edges("grtreport");
    // `crate::NAME` re-exported by lib.rs leads to the file that defines it, not to lib.rs.
    assert!(
        r[&m("output")].contains(&m("engine")),
        "{:?}",
        r[&m("output")]
    );
    assert!(!r[&m("output")].contains(&m("")));
}

/// A circle is found: two files that name each other, one through a `use` group, one through
/// a path in code, one of them through a re-export of the root.
#[test]
fn a_circle_is_found() {
    let mut code = BTreeMap::new();
    code.insert(
        vec![],
        "pub mod a; pub mod b; pub use b::Thing;".to_string(),
    );
    code.insert(
        vec!["a".into()],
        "use crate::{Thing as T, self};\n".to_string(),
    );
    code.insert(
        vec!["b".into()],
        code_of("pub struct Thing; // crate::c::Not\nfn f() { crate::a::g() }\n"),
    );
    let c = Crate {
        name: "t".into(),
        code,
    };
    let g = c.edges();
    assert!(
        g[&vec!["a".to_string()]].contains(&vec!["b".to_string()]),
        "{g:?}"
    );
    assert!(circle(&g, &vec!["a".to_string()]).is_some(), "{g:?}");
    assert!(g[&vec![]].is_empty(), "a pub use is no edge: {g:?}");
}
