//! The job column table and its documentation (JOBS.md §10) name the same columns, in the
//! same order, shown in the same outputs: a column added without its line fails here.

use grtreport::columns::{Csv, Json, COLUMNS};

/// The `| column | outputs | value |` rows of JOBS.md §10.
fn documented() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/JOBS.md")).unwrap();
    let at = text
        .find("## 10. The job columns")
        .expect("JOBS.md has §10");
    let section = &text[at..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    section
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let name = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((name.to_string(), cells.get(2)?.to_string()))
        })
        .collect()
}

#[test]
fn every_job_column_is_documented_with_its_outputs() {
    let table: Vec<(String, String)> = COLUMNS
        .iter()
        .map(|c| {
            let outputs: Vec<&str> = [
                ("text", c.text.is_some()),
                ("csv", c.csv != Csv::No),
                ("json", !matches!(c.json, Json::No)),
                ("html", c.html),
            ]
            .into_iter()
            .filter_map(|(o, on)| on.then_some(o))
            .collect();
            (c.name.to_string(), outputs.join(" "))
        })
        .collect();
    let doc = documented();
    assert!(doc.len() > 40, "JOBS.md §10 lists {} columns", doc.len());
    for (k, (t, d)) in table.iter().zip(&doc).enumerate() {
        assert_eq!(
            t, d,
            "column {k}: the table (left) and JOBS.md §10 (right) differ"
        );
    }
    assert_eq!(table.len(), doc.len(), "table {table:?}\nJOBS.md {doc:?}");
}

#[test]
fn every_column_is_shown_somewhere_and_names_are_unique() {
    let mut names = std::collections::BTreeSet::new();
    for c in COLUMNS {
        assert!(names.insert(c.name), "{} twice", c.name);
        assert!(
            c.text.is_some() || c.csv != Csv::No || !matches!(c.json, Json::No) || c.html,
            "{} is in no output",
            c.name
        );
    }
}
