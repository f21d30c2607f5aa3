//! `--parquet DIR`: the files read back with the parquet crate's own reader. Every table's
//! columns are SCHEMA.md's (name, type, null or not, order), the layout is Hive's
//! (`TABLE/host=HOST/CAPTURE.parquet`), the job rows hold exactly what the CSV rows of the
//! same run hold (one column table drives both), unmeasured phases are null (never 0), and a
//! reader that knows only schema version 1 reads a file with columns appended.

mod common;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use grtreport::dataset::{self, DatasetPlan, TABLES};
use grtreport::table::{Field, Table, Ty};
use parquet::basic::{Repetition, Type as Physical};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field as V;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/report-golden/in")
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("grtreport-dataset-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A scratch directory [`tempdir`] and the dataset `ds` to write in it.
fn dataset_dir(tag: &str) -> (PathBuf, PathBuf) {
    let dir = tempdir(tag);
    let ds = dir.join("ds");
    (dir, ds)
}

fn grtreport(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_grtreport"))
        .args(args)
        .output()
        .unwrap()
}

fn run_ok(args: &[&str]) {
    let out = grtreport(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {err}");
}

/// The one file of `table` under `dir` (any host), and its host directory's name.
fn file_of(dir: &Path, table: &str) -> (PathBuf, String) {
    let mut found = Vec::new();
    for part in std::fs::read_dir(dir.join(table)).unwrap() {
        let part = part.unwrap().path();
        for f in std::fs::read_dir(&part).unwrap() {
            found.push((
                f.unwrap().path(),
                part.file_name().unwrap().to_string_lossy().into_owned(),
            ));
        }
    }
    assert_eq!(found.len(), 1, "{table}: {found:?}");
    found.remove(0)
}

fn reader(p: &Path) -> SerializedFileReader<File> {
    SerializedFileReader::new(File::open(p).unwrap()).unwrap()
}

/// The file's columns as Fields (name, type, nullable).
fn file_fields(r: &SerializedFileReader<File>) -> Vec<Field> {
    r.metadata()
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .map(|c| {
            let ty = match c.physical_type() {
                Physical::INT64 => Ty::I64,
                Physical::DOUBLE => Ty::F64,
                Physical::BOOLEAN => Ty::Bool,
                Physical::BYTE_ARRAY => Ty::Str,
                other => panic!("{}: {other:?}", c.name()),
            };
            let rep = c.self_type().get_basic_info().repetition();
            Field {
                name: c.name().to_string(),
                ty,
                nullable: rep == Repetition::OPTIONAL,
            }
        })
        .collect()
}

/// Every row as column name -> value.
fn rows(r: &SerializedFileReader<File>) -> Vec<BTreeMap<String, V>> {
    r.get_row_iter(None)
        .unwrap()
        .map(|row| {
            row.unwrap()
                .get_column_iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .collect()
}

fn plan(tags: &[&str]) -> DatasetPlan {
    let tags: Vec<String> = tags.iter().map(|s| s.to_string()).collect();
    DatasetPlan::new("d".into(), Some("h".into()), &tags, None).unwrap()
}

/// The fields each table must have, from the library (which SCHEMA.md must list).
fn expected(table: &str, p: &DatasetPlan) -> Vec<Field> {
    match table {
        "captures" => dataset::capture_fields(p),
        "jobs" => dataset::job_fields(p),
        "rings" => dataset::ring_fields(),
        "intervals" => dataset::interval_fields(),
        "deps" => dataset::dep_fields(),
        "processes" => dataset::process_fields(),
        _ => unreachable!(),
    }
}

/// SCHEMA.md's column tables, per table, with `{phase}` and `{tag}` rows expanded (a run
/// of rows with the same placeholder repeats per value, as the files order them) and
/// `tag_KEY` as the given tag keys.
fn schema_md(tag_keys: &[&str]) -> BTreeMap<String, Vec<Field>> {
    let text = include_str!("../SCHEMA.md");
    let phases = grtreport::job::PHASE_NAMES;
    let tags: Vec<String> = grtreport::Tags::NAMES
        .iter()
        .map(|t| grtreport::columns::snake(t))
        .collect();
    let mut out = BTreeMap::new();
    for sec in text.split("\n## ").skip(1) {
        let title = sec.lines().next().unwrap();
        let Some(table) = TABLES.iter().find(|t| title.contains(&format!(" {t}:"))) else {
            continue;
        };
        let mut fields: Vec<Field> = Vec::new();
        let mut group: Vec<(String, Field)> = Vec::new();
        let flush = |group: &mut Vec<(String, Field)>, fields: &mut Vec<Field>| {
            if group.is_empty() {
                return;
            }
            let (ph, _) = &group[0];
            let values: Vec<String> = if ph == "{phase}" {
                phases.iter().map(|s| s.to_string()).collect()
            } else {
                tags.clone()
            };
            for v in values {
                for (ph, f) in group.iter() {
                    fields.push(Field {
                        name: f.name.replace(ph.as_str(), &v),
                        ..f.clone()
                    });
                }
            }
            group.clear();
        };
        for line in sec.lines().filter(|l| l.starts_with("| `")) {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let name = cells[1].trim_matches('`').to_string();
            let ty = match cells[2] {
                "BIGINT" => Ty::I64,
                "DOUBLE" => Ty::F64,
                "BOOLEAN" => Ty::Bool,
                "VARCHAR" => Ty::Str,
                t => panic!("{name}: type {t}"),
            };
            let f = Field {
                name: name.clone(),
                ty,
                nullable: cells[3] != "never",
            };
            let ph = ["{phase}", "{tag}"].into_iter().find(|p| name.contains(p));
            match ph {
                Some(p) => {
                    if group.first().is_some_and(|(g, _)| g != p) {
                        flush(&mut group, &mut fields);
                    }
                    group.push((p.to_string(), f));
                }
                None => {
                    flush(&mut group, &mut fields);
                    if name == "tag_KEY" {
                        for k in tag_keys {
                            fields.push(Field::req(format!("tag_{k}"), Ty::Str));
                        }
                    } else {
                        fields.push(f);
                    }
                }
            }
        }
        flush(&mut group, &mut fields);
        out.insert(table.to_string(), fields);
    }
    out
}

#[test]
fn schema_md_lists_every_column_of_every_table() {
    let md = schema_md(&["kernel", "fleet"]);
    let p = plan(&["kernel=6.12.4", "fleet=a"]);
    for t in TABLES {
        assert_eq!(md.get(t), Some(&expected(t, &p)), "SCHEMA.md, table {t}");
    }
}

#[test]
fn files_have_the_documented_columns_layout_and_metadata() {
    let (dir, ds) = dataset_dir("layout");
    let input = fixtures().join("mixed.grtrace");
    let args = [
        input.to_str().unwrap(),
        "-q",
        "--interval",
        "0.01",
        "--critical-path",
        "--parquet",
        ds.to_str().unwrap(),
        "--host",
        "gpu-07",
        "--tag",
        "kernel=6.12.4",
    ];
    run_ok(&args);
    let p = plan(&["kernel=x"]);
    let mut ids = Vec::new();
    for t in TABLES {
        let (path, part) = file_of(&ds, t);
        assert_eq!(part, "host=gpu-07", "{t}: the host partition");
        let r = reader(&path);
        assert_eq!(file_fields(&r), expected(t, &p), "{t}: columns");
        let kv: BTreeMap<String, String> = r
            .metadata()
            .file_metadata()
            .key_value_metadata()
            .unwrap()
            .iter()
            .map(|k| (k.key.clone(), k.value.clone().unwrap_or_default()))
            .collect();
        assert_eq!(kv["grtrace.table"], t);
        assert_eq!(kv["grtrace.schema_version"], "1");
        let rows = rows(&r);
        assert!(!rows.is_empty(), "{t}: no rows");
        // Every row names its capture, the file's name.
        let id = path.file_stem().unwrap().to_string_lossy().into_owned();
        assert!(rows.iter().all(|r| r["capture_id"] == V::Str(id.clone())));
        ids.push(id);
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "one capture id across the tables");
    // No hidden temporary file is left.
    for t in TABLES {
        for f in std::fs::read_dir(ds.join(t).join("host=gpu-07")).unwrap() {
            let n = f.unwrap().file_name().to_string_lossy().into_owned();
            assert!(n.ends_with(".parquet") && !n.starts_with('.'), "{n}");
        }
    }
    // The captures row.
    let (cap, _) = file_of(&ds, "captures");
    let c = &rows(&reader(&cap))[0];
    assert_eq!(c["schema_version"], V::Long(1));
    assert_eq!(c["tag_kernel"], V::Str("6.12.4".into()));
    assert_eq!(c["source"], V::Str("grtrace".into()));
    assert_eq!(
        c["kernel"],
        V::Null,
        "a native recording does not carry the kernel"
    );
    // The same capture again: the same id, its files replaced, not doubled.
    run_ok(&args);
    let (cap2, _) = file_of(&ds, "captures");
    assert_eq!(cap, cap2);
    // The critical path links are deps rows of kind critical, in order.
    let (deps, _) = file_of(&ds, "deps");
    let links: Vec<_> = rows(&reader(&deps))
        .into_iter()
        .filter(|r| r["kind"] == V::Str("critical".into()))
        .collect();
    assert!(!links.is_empty());
    for (n, l) in links.iter().enumerate() {
        assert_eq!(l["link"], V::Long(n as i64));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A CSV cell against a Parquet value of the same column.
fn same(csv: &str, v: &V) -> bool {
    match v {
        V::Null => csv.is_empty(),
        V::Long(n) => csv.parse::<i64>() == Ok(*n),
        V::Double(d) => csv.parse::<f64>().is_ok_and(|c| (c - d).abs() < 1e-4),
        V::Bool(b) => csv == if *b { "1" } else { "0" },
        // Text columns: the CSV's text, but no blocking class or flag is '' here and '-'
        // there.
        V::Str(s) => csv == s || (s.is_empty() && csv == "-"),
        _ => false,
    }
}

#[test]
fn job_rows_hold_what_the_csv_rows_hold() {
    for input in [
        "mixed.grtrace",
        "dep-chain.grtrace",
        "amdgpu612",
        "i915-small",
        "cards",
    ] {
        let (dir, ds) = dataset_dir(input);
        let csv_path = dir.join("jobs.csv");
        let f = fixtures().join(input);
        run_ok(&[
            f.to_str().unwrap(),
            "-q",
            "--csv",
            csv_path.to_str().unwrap(),
            "--parquet",
            ds.to_str().unwrap(),
        ]);
        let mut rd = csv::Reader::from_path(&csv_path).unwrap();
        let header = rd.headers().unwrap().clone();
        let csv_rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
        let (path, part) = file_of(&ds, "jobs");
        assert_eq!(part, format!("host={}", dataset::NULL_PARTITION));
        let pq = rows(&reader(&path));
        assert_eq!(pq.len(), csv_rows.len(), "{input}: one row per job");
        for (c, p) in csv_rows.iter().zip(&pq) {
            for (name, cell) in header.iter().zip(c.iter()) {
                let (key, cell) = match name {
                    // The CSV's seconds are the table's ns since the origin.
                    "time_s" => ("time_ns", cell.replace('.', "")),
                    n => (n, cell.to_string()),
                };
                let v = p
                    .get(key)
                    .unwrap_or_else(|| panic!("{input}: no column {key}"));
                let cell = if key == "time_ns" {
                    cell.trim_start_matches('0').to_string()
                } else {
                    cell
                };
                let ok =
                    same(&cell, v) || (key == "time_ns" && cell.is_empty() && v == &V::Long(0));
                assert!(ok, "{input}: {key}: csv '{cell}' parquet {v:?}");
            }
        }
        // Alone, the dataset's job sink runs on the classifying thread (beside --csv, on the
        // joining one): the same rows, blocker edges and processes either way.
        let alone = dir.join("alone");
        run_ok(&[
            f.to_str().unwrap(),
            "-q",
            "--parquet",
            alone.to_str().unwrap(),
        ]);
        for table in ["jobs", "deps", "processes"] {
            let (a, _) = file_of(&alone, table);
            let (b, _) = file_of(&ds, table);
            assert_eq!(
                rows(&reader(&a)),
                rows(&reader(&b)),
                "{input}: {table} alone and beside --csv"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn unmeasured_phases_are_null_never_zero() {
    // amdgpu through the 6.12 scheduler tracepoints: the import note says submit_host and
    // vm_fault cannot be measured (the text shows '-').
    let (dir, ds) = dataset_dir("nulls");
    let f = fixtures().join("amdgpu612");
    run_ok(&[f.to_str().unwrap(), "-q", "--parquet", ds.to_str().unwrap()]);
    let (jobs, _) = file_of(&ds, "jobs");
    let jobs = rows(&reader(&jobs));
    assert!(jobs.len() > 10);
    for j in &jobs {
        assert_eq!(j["submit_host_ns"], V::Null, "{j:?}");
        if j["incomplete"] == V::Bool(false) {
            assert!(matches!(j["exec_ns"], V::Long(n) if n > 0), "{j:?}");
            assert!(matches!(j["total_ns"], V::Long(_)));
        }
    }
    let (rings, _) = file_of(&ds, "rings");
    for r in rows(&reader(&rings)) {
        for stat in ["n", "min_ns", "p99_ns", "share"] {
            assert_eq!(r[&format!("submit_host_{stat}")], V::Null);
        }
        assert!(matches!(r["exec_n"], V::Long(n) if n > 0));
        assert_eq!(r["host_submit_jobs"], V::Null, "host-submit is not judged");
        assert_eq!(r["idle_host"], V::Null);
    }
    let (caps, _) = file_of(&ds, "captures");
    let c = &rows(&reader(&caps))[0];
    assert_eq!(c["source"], V::Str("import".into()));
    assert!(
        matches!(&c["source_detail"], V::Str(k) if k.contains("grtimport")),
        "{c:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_version_1_reader_reads_a_file_with_appended_columns() {
    let dir = tempdir("v2");
    let v1 = dataset::job_fields(&plan(&[]));
    // A later version: the same columns, then new ones at the end.
    let mut v2 = v1.clone();
    v2.push(Field::opt("new_ns", Ty::I64));
    v2.push(Field::req("new_word", Ty::Str));
    let path = dir.join("later.parquet");
    let mut t = Table::create("jobs", path.clone(), v2.clone(), vec![]).unwrap();
    for row in 0..3i64 {
        for f in &v2 {
            match f.ty {
                Ty::I64 => t.i64(Some(row)),
                Ty::F64 => t.f64(Some(0.5)),
                Ty::Bool => t.bool(Some(row % 2 == 1)),
                Ty::Str => t.str(Some(b"w")),
            }
        }
        t.end_row().unwrap();
    }
    t.finish().unwrap();
    // The version-1 reader: its own column list, projected by name.
    let r = reader(&path);
    let file_schema = r
        .metadata()
        .file_metadata()
        .schema_descr()
        .root_schema()
        .clone();
    let wanted: Vec<Arc<parquet::schema::types::Type>> = file_schema
        .get_fields()
        .iter()
        .filter(|f| v1.iter().any(|c| c.name == f.name()))
        .cloned()
        .collect();
    assert_eq!(
        wanted.len(),
        v1.len(),
        "every v1 column is in the later file"
    );
    let projection = parquet::schema::types::Type::group_type_builder("jobs")
        .with_fields(wanted)
        .build()
        .unwrap();
    let got: Vec<_> = r
        .get_row_iter(Some(projection))
        .unwrap()
        .map(|row| row.unwrap())
        .collect();
    assert_eq!(got.len(), 3);
    for (n, row) in got.iter().enumerate() {
        let names: Vec<&String> = row.get_column_iter().map(|(k, _)| k).collect();
        let v1_names: Vec<&String> = v1.iter().map(|f| &f.name).collect();
        assert_eq!(names, v1_names);
        let ctx = row.get_column_iter().find(|(k, _)| *k == "ctx").unwrap().1;
        assert_eq!(ctx, &V::Long(n as i64));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_labels_are_usage_errors_and_a_failed_run_leaves_no_file() {
    // Every jobs row carries every tag: their number and length are bounded.
    let long_value = format!("k={}", "x".repeat(dataset::MAX_TAG_VALUE + 1));
    let tags: Vec<String> = (0..=dataset::MAX_TAGS).map(|i| format!("k{i}=v")).collect();
    let many_tags: Vec<&str> = tags.iter().flat_map(|t| ["--tag", t.as_str()]).collect();
    let (dir, ds) = dataset_dir("usage");
    let f = fixtures().join("mixed.grtrace");
    for bad in [
        &["--tag", "Kernel=1"][..],
        &["--tag", "kernel"],
        &["--tag", "k=1", "--tag", "k=2"],
        &["--host", "a/b"],
        &["--host", ".."],
        // Hive's name for the null partition: the capture would read as hostless.
        &["--host", "__HIVE_DEFAULT_PARTITION__"],
        &["--capture-id", "x y"],
        &["--tag", &long_value],
        &many_tags,
    ] {
        let mut args = vec![f.to_str().unwrap(), "-q", "--parquet", ds.to_str().unwrap()];
        args.extend_from_slice(bad);
        let out = grtreport(&args);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("grtreport: --"), "{err}");
    }
    assert!(!ds.exists(), "a usage error writes nothing");
    // --tag without --parquet: a usage error too.
    assert_eq!(
        grtreport(&[f.to_str().unwrap(), "--tag", "a=b"])
            .status
            .code(),
        Some(2)
    );
    // A damaged input: what came before the damage is in the dataset, the exit status is 1.
    let data = std::fs::read(&f).unwrap();
    let cut = dir.join("cut.grtrace");
    let mut damaged = data[..data.len() / 2].to_vec();
    damaged.extend_from_slice(&[0xff; 40]);
    std::fs::write(&cut, &damaged).unwrap();
    let out = grtreport(&[
        cut.to_str().unwrap(),
        "-q",
        "--parquet",
        ds.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let (caps, _) = file_of(&ds, "captures");
    let c = &rows(&reader(&caps))[0];
    assert!(matches!(c["input_errors"], V::Long(n) if n >= 1), "{c:?}");
    assert!(
        matches!(&c["first_error"], V::Str(e) if e.contains("cut.grtrace")),
        "{c:?}"
    );
    let (jobs, _) = file_of(&ds, "jobs");
    assert!(!rows(&reader(&jobs)).is_empty());
    // The dataset's directory cannot be made: exit 1, a message naming it.
    let blocker = dir.join("file");
    std::fs::write(&blocker, b"x").unwrap();
    let out = grtreport(&[
        f.to_str().unwrap(),
        "-q",
        "--parquet",
        blocker.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        format!(
            "grtreport: {}: Not a directory (os error 20)",
            dataset::partition_dir(&blocker, "jobs", None).display()
        )
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A dataset file that is one of the inputs (a capture stored under the name the dataset
/// would give its jobs file) is refused before anything is written: the input stays.
#[test]
fn a_dataset_file_that_is_an_input_is_refused() {
    let (dir, ds) = dataset_dir("is-input");
    let plan = DatasetPlan::new(ds.clone(), Some("h".into()), &[], Some("c1".into())).unwrap();
    let input = plan.file("c1", "jobs");
    std::fs::create_dir_all(input.parent().unwrap()).unwrap();
    let data = std::fs::read(fixtures().join("mixed.grtrace")).unwrap();
    std::fs::write(&input, &data).unwrap();
    let out = grtreport(&[
        input.to_str().unwrap(),
        "-q",
        "--parquet",
        ds.to_str().unwrap(),
        "--host",
        "h",
        "--capture-id",
        "c1",
    ]);
    // Exit 1, as for -o or --csv naming an input.
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("grtreport: --parquet ") && err.contains("input"),
        "{err}"
    );
    assert_eq!(std::fs::read(&input).unwrap(), data);
    assert!(!plan.file("c1", "captures").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A table that cannot be put in place (here its name is taken by a directory): exit 1 naming
/// it, and the capture is not in the dataset: no captures row, no temporary file left.
#[test]
fn a_table_not_put_in_place_leaves_no_captures_row() {
    let (dir, ds) = dataset_dir("publish");
    let f = fixtures().join("mixed.grtrace");
    let plan = DatasetPlan::new(ds.clone(), Some("h".into()), &[], Some("c1".into())).unwrap();
    let taken = plan.file("c1", "rings");
    std::fs::create_dir_all(taken.join("x")).unwrap();
    let args = [f.to_str().unwrap(), "-q", "--parquet", ds.to_str().unwrap()];
    let out = grtreport(&[&args[..], &["--host", "h", "--capture-id", "c1"]].concat());
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&taken.display().to_string()), "{err}");
    assert!(!plan.file("c1", "captures").exists());
    let mut left = Vec::new();
    let mut todo = vec![ds.clone()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else if p.file_name().unwrap().to_string_lossy().starts_with('.') {
                left.push(p);
            }
        }
    }
    assert!(left.is_empty(), "temporary files left: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Standard output closed under a run that also writes a dataset (`--csv - --parquet DIR
/// | head`): the run stops with stdout, so the dataset would hold part of the capture. It is
/// not written, and the exit status says so (1, one line naming DIR), where a run with
/// only stdout outputs ends quietly. With stdout open, the same run writes the dataset.
#[test]
fn a_closed_stdout_does_not_silently_drop_the_dataset() {
    let (_, ds) = dataset_dir("closed");
    let f = fixtures().join("mixed.grtrace");
    let args = [
        f.to_str().unwrap(),
        "-q",
        "--csv",
        "-",
        "--parquet",
        ds.to_str().unwrap(),
    ];
    let out = common::output_into_closed_stdout(&args);
    common::assert_not_written_for_closed_stdout(&out, "--parquet", &ds);
    fn parquet_files(d: &Path) -> usize {
        std::fs::read_dir(d).map_or(0, |rd| {
            rd.flatten()
                .map(|e| {
                    let p = e.path();
                    if p.is_dir() {
                        parquet_files(&p)
                    } else {
                        usize::from(p.extension().is_some_and(|x| x == "parquet"))
                    }
                })
                .sum()
        })
    }
    assert_eq!(parquet_files(&ds), 0, "no file of a part of the capture");
    run_ok(&args);
    let (p, _) = file_of(&ds, "captures");
    assert!(p.exists());
}
