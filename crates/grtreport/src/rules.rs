//! Blocking-class thresholds (JOBS.md §5; the design's §5.3 defaults). Every value can be changed with
//! `--rule name=value` or a rules file of `name = value` lines (`#` starts a comment).

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub struct Rules {
    /// host-submit: t_submit_host > host_share × t_total and > host_min_us.
    pub host_share: f64,
    pub host_min_us: f64,
    /// queue-wait: (t_queue − host-side dependency wait) > queue_share × t_total and
    /// > queue_min_us, with ring fill ≥ queue_fill or outstanding ≥ queue_outstanding at SUBMIT.
    pub queue_share: f64,
    pub queue_min_us: f64,
    pub queue_fill: f64,
    pub queue_outstanding: f64,
    /// exec-tail: own execution > tail_factor × P(tail_quantile) of the same job class
    /// (same ctx and ring), with t_gpu_wait ≤ tail_max_wait × t_exec, once the class has
    /// tail_min_jobs jobs. tail_window jobs are held back so the first ones have a P90 too.
    pub tail_factor: f64,
    pub tail_quantile: f64,
    pub tail_max_wait: f64,
    pub tail_min_jobs: f64,
    pub tail_window: f64,
    /// dep-wait: t_gpu_wait > dep_share × t_total, or ≥ dep_segments SYNC windows.
    pub dep_share: f64,
    pub dep_segments: f64,
    /// vm-fault: at least fault_min VM_FAULT/VM_RETRY events while the job ran.
    pub fault_min: f64,
    /// preempt-thrash: taken off the GPU ≥ preempt_min times with ≥ preempt_switches
    /// CTX_SWITCHes on the ring while it was there.
    pub preempt_min: f64,
    pub preempt_switches: f64,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            host_share: 0.30,
            host_min_us: 200.0,
            queue_share: 0.50,
            queue_min_us: 500.0,
            queue_fill: 0.50,
            queue_outstanding: 2.0,
            tail_factor: 1.5,
            tail_quantile: 0.90,
            tail_max_wait: 0.25,
            tail_min_jobs: 20.0,
            tail_window: 4096.0,
            dep_share: 0.40,
            dep_segments: 3.0,
            fault_min: 1.0,
            preempt_min: 2.0,
            preempt_switches: 2.0,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleError(pub String);

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for RuleError {}

macro_rules! rule_table {
    ($($name:literal => $field:ident : $help:literal),* $(,)?) => {
        impl Rules {
            /// (name, help) of every rule, in documentation order.
            pub const NAMES: &'static [(&'static str, &'static str)] = &[$(($name, $help)),*];

            fn field_mut(&mut self, name: &str) -> Option<&mut f64> {
                match name {
                    $($name => Some(&mut self.$field),)*
                    _ => None,
                }
            }

            pub fn get(&self, name: &str) -> Option<f64> {
                match name {
                    $($name => Some(self.$field),)*
                    _ => None,
                }
            }
        }
    };
}

rule_table! {
    "host-share" => host_share: "host-submit: minimum t_submit_host / t_total",
    "host-min-us" => host_min_us: "host-submit: minimum t_submit_host in us",
    "queue-share" => queue_share: "queue-wait: minimum t_queue / t_total",
    "queue-min-us" => queue_min_us: "queue-wait: minimum t_queue in us",
    "queue-fill" => queue_fill: "queue-wait: ring fill at SUBMIT that counts as high (0-1)",
    "queue-outstanding" => queue_outstanding: "queue-wait: jobs outstanding at SUBMIT that count as many",
    "tail-factor" => tail_factor: "exec-tail: own exec must exceed this x the class quantile",
    "tail-quantile" => tail_quantile: "exec-tail: quantile of the job class (ctx, ring)",
    "tail-max-wait" => tail_max_wait: "exec-tail: maximum t_gpu_wait / t_exec",
    "tail-min-jobs" => tail_min_jobs: "exec-tail: jobs a class needs before tails are called",
    "tail-window" => tail_window: "exec-tail: jobs held back so early jobs see a quantile",
    "dep-share" => dep_share: "dep-wait: minimum t_gpu_wait / t_total",
    "dep-segments" => dep_segments: "dep-wait: SYNC windows that count as several",
    "fault-min" => fault_min: "vm-fault: VM_FAULT/VM_RETRY events in the job's window",
    "preempt-min" => preempt_min: "preempt-thrash: times the job was taken off the GPU",
    "preempt-switches" => preempt_switches: "preempt-thrash: CTX_SWITCHes on the ring while it ran",
}

impl Rules {
    /// Applies one `name=value`.
    pub fn set(&mut self, spec: &str) -> Result<(), RuleError> {
        let (name, value) = spec
            .split_once('=')
            .ok_or_else(|| RuleError(format!("rule '{spec}' is not name=value")))?;
        let (name, value) = (name.trim(), value.trim());
        let v: f64 = value
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| {
                RuleError(format!(
                    "rule {name}: '{value}' is not a non-negative number"
                ))
            })?;
        let field = self.field_mut(name).ok_or_else(|| {
            RuleError(format!(
                "unknown rule '{name}' (known: {})",
                Self::NAMES
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        *field = v;
        Ok(())
    }

    /// Applies a rules file's text; errors name the line.
    pub fn apply_text(&mut self, text: &str) -> Result<(), RuleError> {
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            self.set(line)
                .map_err(|e| RuleError(format!("line {}: {}", i + 1, e.0)))?;
        }
        Ok(())
    }

    /// The rules as a file that [`apply_text`](Self::apply_text) reads back.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        for (n, help) in Self::NAMES {
            s.push_str(&format!("# {help}\n{n} = {}\n", self.get(n).unwrap_or(0.0)));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_from_flags_and_files() {
        let mut r = Rules::default();
        r.set("queue-min-us=250").unwrap();
        assert_eq!(r.queue_min_us, 250.0);
        r.apply_text("# comment\n\nhost-share = 0.5  # trailing\n")
            .unwrap();
        assert_eq!(r.host_share, 0.5);
        let e = r.apply_text("host-share=0.5\nbogus=1\n").unwrap_err();
        assert!(e.0.starts_with("line 2: unknown rule 'bogus'"), "{e}");
        assert!(r.set("dep-share").is_err());
        assert!(r.set("dep-share=-1").is_err());
        let mut back = Rules::default();
        back.apply_text(&r.to_text()).unwrap();
        assert_eq!(back, r);
    }
}
