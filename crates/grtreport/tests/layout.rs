//! The crate's rooms import each other without a circle (issue 23): the pipeline never
//! imports a printer, printers import the pipeline and the model. Read from the sources:
//! every `crate::NAME` (also inside `use crate::{...}`) outside a file's unit tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module -> the modules of this crate it names.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut texts = BTreeMap::new();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_str().unwrap().to_string();
        if p.extension().is_some_and(|x| x == "rs") && name != "lib" && name != "main" {
            let text = std::fs::read_to_string(&p).unwrap();
            let code = match text.find("#[cfg(test)]\nmod tests") {
                Some(at) => text[..at].to_string(),
                None => text,
            };
            let code: String = code
                .lines()
                .map(|l| l.split("//").next().unwrap())
                .collect::<Vec<_>>()
                .join("\n");
            texts.insert(name, code);
        }
    }
    let names: BTreeSet<String> = texts.keys().cloned().collect();
    let word = |s: &str| {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect::<String>()
    };
    texts
        .iter()
        .map(|(m, code)| {
            let mut refs = BTreeSet::new();
            for part in code.split("crate::").skip(1) {
                if let Some(group) = part.strip_prefix('{') {
                    let group = &group[..group.find('}').unwrap_or(group.len())];
                    refs.extend(group.split(',').map(|g| word(g.trim())));
                } else {
                    refs.insert(word(part));
                }
            }
            let refs = refs
                .into_iter()
                .filter(|r| names.contains(r) && r != m)
                .collect();
            (m.clone(), refs)
        })
        .collect()
}

/// A path from `from` back to itself, if any.
fn circle(g: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    let mut stack = vec![vec![from.to_string()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = stack.pop() {
        for next in &g[path.last().unwrap()] {
            if next == from {
                let mut p = path.clone();
                p.push(next.clone());
                return Some(p);
            }
            if seen.insert(next.clone()) {
                let mut p = path.clone();
                p.push(next.clone());
                stack.push(p);
            }
        }
    }
    None
}

#[test]
fn no_module_imports_itself_through_others() {
    let g = imports();
    assert!(g.len() > 20, "the sources were not found: {g:?}");
    // The reader would miss a circle if it missed imports: these are known ones.
    assert!(g["output"].contains("engine") && g["engine"].contains("joiner"));
    let circles: Vec<String> = g
        .keys()
        .filter_map(|m| circle(&g, m))
        .map(|p| p.join(" -> "))
        .collect();
    assert!(circles.is_empty(), "circles:\n{}", circles.join("\n"));
}

#[test]
fn the_pipeline_imports_no_printer() {
    let g = imports();
    let printers = [
        "output", "json", "rows", "perfetto", "html", "export", "cli",
    ];
    for m in [
        "engine", "joiner", "classify", "summary", "critical", "report", "units",
    ] {
        for p in printers {
            assert!(!g[m].contains(p), "{m} imports the printer {p}");
        }
    }
}
