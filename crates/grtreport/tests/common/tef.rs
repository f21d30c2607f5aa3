//! A checker of the JSON Trace Event Format (the format Perfetto and chrome://tracing load,
//! as published in Google's "Trace Event Format" document), strict about what the viewers
//! silently drop:
//!
//! * the document is `{"traceEvents": [...]}` (or a bare array); `displayTimeUnit` is
//!   `ms` or `ns`;
//! * every event is an object with a known `ph`, a string `name`, integer `pid` (and `tid`
//!   where the phase is thread-scoped), a number `ts` >= 0 (not for metadata), `cat` a
//!   string and `args` an object when present; `X` has a `dur` >= 0; instants have a scope
//!   `g`, `p` or `t`; counters have numeric args; metadata names are known ones with their
//!   argument (`name` string or `sort_index` integer);
//! * per thread track (pid, tid), in file order: slices (`B`/`E`, `X`) and thread instants
//!   keep time order, `B`/`E` balance (every `E` closes an open `B`, nothing left open) and
//!   complete slices nest properly (a slice that starts inside another ends inside it);
//! * counters keep time order per (pid, name);
//! * flows: per (cat, id) exactly one start `s` and one end `f` (steps `t` optional), start
//!   not after end, and each end point lies inside a slice of its thread (where viewers bind
//!   the arrow); `bp` is `e` when present.
//!
//! Times are compared in integer nanoseconds (the exporter writes microseconds with three
//! decimals).
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

/// What a valid document contained.
#[derive(Debug, Default)]
pub struct Checked {
    /// Events by phase.
    pub phases: BTreeMap<String, usize>,
    /// pid -> process name.
    pub processes: HashMap<i64, String>,
    /// (pid, tid) -> thread name.
    pub threads: HashMap<(i64, i64), String>,
    /// Flows by category (complete start/end pairs).
    pub flows: BTreeMap<String, usize>,
    /// Every event, for test-specific assertions.
    pub events: Vec<Value>,
    /// `otherData`, if any.
    pub other: Option<Value>,
}

impl Checked {
    pub fn count(&self, ph: &str) -> usize {
        self.phases.get(ph).copied().unwrap_or(0)
    }
    /// Events of phase `ph` whose name satisfies `f`.
    pub fn named<'a>(&'a self, ph: &'a str, f: impl Fn(&str) -> bool + 'a) -> Vec<&'a Value> {
        self.events
            .iter()
            .filter(|e| e["ph"] == ph && e["name"].as_str().is_some_and(&f))
            .collect()
    }
}

/// Microseconds (JSON number) -> integer nanoseconds.
pub fn ns(v: &Value) -> Option<i64> {
    let f = v.as_f64()?;
    if !f.is_finite() {
        return None;
    }
    Some((f * 1000.0).round() as i64)
}

#[derive(Default)]
struct Track {
    last_ts: i64,
    /// Open `B` slices (their ts) and the ends of enclosing `X` slices.
    b_open: Vec<i64>,
    x_open: Vec<i64>,
    /// Every slice [start, end], to bind flows (kept sorted by start: file order).
    slices: Vec<(i64, i64)>,
}

struct FlowEnd {
    pid: i64,
    tid: i64,
    ts: i64,
    idx: usize,
}

/// Checks a document; returns what it held or the first problems found (up to 20).
pub fn check(text: &str) -> Result<Checked, Vec<String>> {
    let doc: Value = serde_json::from_str(text).map_err(|e| vec![format!("not JSON: {e}")])?;
    let mut out = Checked::default();
    let mut errs = Vec::new();
    let events = match &doc {
        Value::Array(a) => a.clone(),
        Value::Object(o) => {
            if let Some(u) = o.get("displayTimeUnit") {
                if u != "ms" && u != "ns" {
                    errs.push(format!("displayTimeUnit {u} is not \"ms\" or \"ns\""));
                }
            }
            out.other = o.get("otherData").cloned();
            match o.get("traceEvents") {
                Some(Value::Array(a)) => a.clone(),
                _ => return Err(vec!["no traceEvents array".into()]),
            }
        }
        _ => return Err(vec!["neither an object nor an array".into()]),
    };
    let mut tracks: HashMap<(i64, i64), Track> = HashMap::new();
    let mut counters: HashMap<(i64, String), i64> = HashMap::new();
    let mut flow_s: HashMap<(String, String), FlowEnd> = HashMap::new();
    let mut flow_f: HashMap<(String, String), FlowEnd> = HashMap::new();
    let mut err = |i: usize, e: &Value, m: String| {
        if errs.len() < 20 {
            errs.push(format!("event {i}: {m}: {e}"));
        }
    };
    for (i, e) in events.iter().enumerate() {
        let Some(o) = e.as_object() else {
            err(i, e, "not an object".into());
            continue;
        };
        let ph = match o.get("ph").and_then(Value::as_str) {
            Some(p) => p.to_string(),
            None => {
                err(i, e, "no ph".into());
                continue;
            }
        };
        *out.phases.entry(ph.clone()).or_default() += 1;
        let known = [
            "B", "E", "X", "i", "I", "C", "b", "n", "e", "s", "t", "f", "P", "N", "O", "D", "M",
            "V", "v", "R", "c", "(", ")",
        ];
        if !known.contains(&ph.as_str()) {
            err(i, e, format!("unknown ph {ph}"));
            continue;
        }
        let name = o.get("name").and_then(Value::as_str);
        if name.is_none() && ph != "E" {
            err(i, e, "no string name".into());
        }
        if let Some(c) = o.get("cat") {
            if !c.is_string() {
                err(i, e, "cat is not a string".into());
            }
        }
        if let Some(a) = o.get("args") {
            if !a.is_object() {
                err(i, e, "args is not an object".into());
            }
        }
        let pid = o.get("pid").and_then(Value::as_i64);
        let tid = o.get("tid").and_then(Value::as_i64);
        let Some(pid) = pid else {
            err(i, e, "no integer pid".into());
            continue;
        };
        if ph == "M" {
            let arg = |k: &str| o.get("args").and_then(|a| a.get(k)).cloned();
            match name.unwrap_or("") {
                n @ ("process_name" | "thread_name" | "process_labels") => match arg("name")
                    .or_else(|| arg("labels"))
                    .and_then(|v| v.as_str().map(String::from))
                {
                    Some(s) if n == "process_name" => {
                        out.processes.insert(pid, s);
                    }
                    Some(s) if n == "thread_name" => match tid {
                        Some(t) => {
                            out.threads.insert((pid, t), s);
                        }
                        None => err(i, e, "thread_name without tid".into()),
                    },
                    Some(_) => {}
                    None => err(i, e, format!("{n} without a string argument")),
                },
                "process_sort_index" | "thread_sort_index" => {
                    if arg("sort_index").and_then(|v| v.as_i64()).is_none() {
                        err(i, e, "sort index is not an integer".into());
                    }
                }
                other => err(i, e, format!("unknown metadata {other}")),
            }
            out.events.push(e.clone());
            continue;
        }
        let Some(ts) = o.get("ts").and_then(ns) else {
            err(i, e, "no numeric ts".into());
            continue;
        };
        if ts < 0 {
            err(i, e, "negative ts".into());
        }
        let thread_scoped = matches!(ph.as_str(), "B" | "E" | "X" | "s" | "t" | "f")
            || (matches!(ph.as_str(), "i" | "I")
                && o.get("s").and_then(Value::as_str).unwrap_or("t") == "t");
        if thread_scoped && tid.is_none() {
            err(i, e, "no integer tid".into());
            continue;
        }
        let key = (pid, tid.unwrap_or(0));
        match ph.as_str() {
            "B" | "E" | "X" | "i" | "I" if thread_scoped => {
                let t = tracks.entry(key).or_default();
                if ts < t.last_ts {
                    err(i, e, format!("time goes back on track {key:?}"));
                }
                t.last_ts = ts;
                match ph.as_str() {
                    "B" => t.b_open.push(ts),
                    "E" => {
                        if t.b_open.pop().is_none() {
                            err(i, e, format!("E with no open B on {key:?}"));
                        }
                    }
                    "X" => {
                        let dur = match o.get("dur").and_then(ns) {
                            Some(d) if d >= 0 => d,
                            _ => {
                                err(i, e, "X without a dur >= 0".into());
                                continue;
                            }
                        };
                        while t.x_open.last().is_some_and(|&end| end <= ts) {
                            t.x_open.pop();
                        }
                        if let Some(&end) = t.x_open.last() {
                            if ts + dur > end {
                                err(
                                    i,
                                    e,
                                    format!("X overlaps its parent (ends {end}) on {key:?}"),
                                );
                            }
                        }
                        t.x_open.push(ts + dur);
                        t.slices.push((ts, ts + dur));
                    }
                    _ => {
                        if let Some(s) = o.get("s").and_then(Value::as_str) {
                            if !["g", "p", "t"].contains(&s) {
                                err(i, e, format!("instant scope {s}"));
                            }
                        }
                    }
                }
            }
            "i" | "I" => {
                let s = o.get("s").and_then(Value::as_str).unwrap_or("t");
                if !["g", "p"].contains(&s) {
                    err(i, e, format!("instant scope {s}"));
                }
            }
            "C" => {
                let ok = o
                    .get("args")
                    .and_then(Value::as_object)
                    .is_some_and(|a| !a.is_empty() && a.values().all(Value::is_number));
                if !ok {
                    err(i, e, "counter args are not all numbers".into());
                }
                let k = (pid, name.unwrap_or("").to_string());
                let last = counters.entry(k).or_insert(i64::MIN);
                if ts < *last {
                    err(i, e, "counter time goes back".into());
                }
                *last = ts;
            }
            "s" | "t" | "f" => {
                let Some(id) = o.get("id").map(|v| v.to_string()) else {
                    err(i, e, "flow without id".into());
                    continue;
                };
                let cat = o
                    .get("cat")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                if let Some(bp) = o.get("bp") {
                    if bp != "e" {
                        err(i, e, "bp is not \"e\"".into());
                    }
                }
                let end = FlowEnd {
                    pid,
                    tid: key.1,
                    ts,
                    idx: i,
                };
                let map = match ph.as_str() {
                    "s" => &mut flow_s,
                    "f" => &mut flow_f,
                    _ => continue,
                };
                if map.insert((cat, id), end).is_some() {
                    err(i, e, format!("second flow {ph} with this cat and id"));
                }
            }
            _ => {}
        }
        out.events.push(e.clone());
    }
    for (k, t) in &tracks {
        if !t.b_open.is_empty() {
            errs.push(format!("{} B left open on track {k:?}", t.b_open.len()));
        }
    }
    let inside = |f: &FlowEnd| {
        tracks
            .get(&(f.pid, f.tid))
            .is_some_and(|t| t.slices.iter().any(|&(a, b)| a <= f.ts && f.ts <= b))
    };
    for (k, s) in &flow_s {
        let Some(f) = flow_f.get(k) else {
            errs.push(format!("flow {k:?} (event {}) never ends", s.idx));
            continue;
        };
        if s.ts > f.ts {
            errs.push(format!("flow {k:?} ends before it starts"));
        }
        for (what, end) in [("start", s), ("end", f)] {
            if !inside(end) {
                errs.push(format!(
                    "flow {k:?} {what} (event {}) is in no slice of its thread",
                    end.idx
                ));
            }
        }
        *out.flows.entry(k.0.clone()).or_default() += 1;
    }
    for k in flow_f.keys() {
        if !flow_s.contains_key(k) {
            errs.push(format!("flow {k:?} ends without a start"));
        }
    }
    errs.truncate(20);
    if errs.is_empty() {
        Ok(out)
    } else {
        Err(errs)
    }
}

#[cfg(test)]
mod self_test {
    use super::check;

    #[test]
    fn checker_rejects_what_viewers_drop() {
        let ok = r#"{"traceEvents":[
            {"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":10},
            {"ph":"X","name":"b","pid":1,"tid":1,"ts":2,"dur":3},
            {"ph":"s","name":"f","cat":"c","id":1,"pid":1,"tid":1,"ts":1},
            {"ph":"f","name":"f","cat":"c","id":1,"pid":1,"tid":1,"ts":4,"bp":"e"}]}"#;
        assert!(check(ok).is_ok());
        for bad in [
            r#"[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":10},{"ph":"X","name":"b","pid":1,"tid":1,"ts":5,"dur":10}]"#,
            r#"[{"ph":"B","name":"a","pid":1,"tid":1,"ts":0}]"#,
            r#"[{"ph":"E","pid":1,"tid":1,"ts":0}]"#,
            r#"[{"ph":"X","name":"a","pid":1,"tid":1,"ts":5,"dur":1},{"ph":"X","name":"b","pid":1,"tid":1,"ts":1,"dur":1}]"#,
            r#"[{"ph":"s","name":"f","cat":"c","id":1,"pid":1,"tid":1,"ts":1}]"#,
            r#"[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":1},{"ph":"s","name":"f","cat":"c","id":1,"pid":1,"tid":1,"ts":0},{"ph":"f","name":"f","cat":"c","id":1,"pid":1,"tid":1,"ts":5}]"#,
            r#"[{"ph":"C","name":"c","pid":1,"ts":0,"args":{"v":"x"}}]"#,
            r#"[{"ph":"Q","name":"a","pid":1,"tid":1,"ts":0}]"#,
            r#"[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0}]"#,
        ] {
            assert!(check(bad).is_err(), "accepted {bad}");
        }
    }
}
