//! Progress bars for the library's [`Progress`] hook: drawn with indicatif on standard error when
//! it is a terminal and bars are wanted, nothing otherwise (quiet when piped). A stream of known
//! length gets a bar over its bytes, one of unknown length (standard input, a compressed file, a
//! live capture) a spinner; both show the rate in human units (`45.6 M keys/s`, `12.3 Mpps`).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use bloomlanes_host::{Progress, Stage};
use indicatif::{ProgressBar, ProgressStyle};

/// One bar at a time, started by the first report of a stage and cleared by its last.
pub struct Bar {
    enabled: bool,
    bar: Option<(ProgressBar, Stage, Instant)>,
}

/// A rate for people: `45.6 M keys/s`, `12.3 Mpps`.
pub fn human_rate(per_second: f64, packets: bool) -> String {
    let (v, prefix) = if per_second >= 1e9 {
        (per_second / 1e9, "G")
    } else if per_second >= 1e6 {
        (per_second / 1e6, "M")
    } else if per_second >= 1e3 {
        (per_second / 1e3, "k")
    } else {
        (per_second, "")
    };
    if packets {
        format!("{v:.1} {prefix}pps")
    } else {
        format!("{v:.1} {prefix} keys/s").replace("  ", " ")
    }
}

impl Bar {
    /// A bar that draws only when `wanted` and standard error is a terminal.
    pub fn new(wanted: bool) -> Bar {
        Bar {
            enabled: wanted && std::io::stderr().is_terminal(),
            bar: None,
        }
    }

    /// Shows `p`: the hook to hand the library (`&mut |p| bar.update(p)`).
    pub fn update(&mut self, p: Progress) {
        if !self.enabled {
            return;
        }
        let fresh = match &self.bar {
            Some((_, stage, _)) => *stage != p.stage || (p.done == 0 && p.bytes == 0),
            None => true,
        };
        if fresh {
            if let Some((b, _, _)) = self.bar.take() {
                b.finish_and_clear();
            }
            self.bar = Some((new_bar(p), p.stage, Instant::now()));
        }
        let Some((bar, _, start)) = &self.bar else {
            return;
        };
        let packets = p.stage == Stage::Classify;
        let unit = if packets { "packets" } else { "keys" };
        let secs = start.elapsed().as_secs_f64().max(1e-9);
        let rate = human_rate(p.done as f64 / secs, packets);
        if p.bytes_total > 0 {
            bar.set_position(p.bytes.min(p.bytes_total));
            bar.set_message(format!("{} {} {unit}, {rate}", p.stage.name(), p.done));
        } else if p.total > 0 {
            bar.set_position(p.done);
            bar.set_message(format!("{} {rate}", p.stage.name()));
        } else {
            bar.set_message(format!("{} {} {unit}, {rate}", p.stage.name(), p.done));
            bar.tick();
        }
        if p.finished || (p.total > 0 && p.done >= p.total && p.bytes_total == 0) {
            bar.finish_and_clear();
            self.bar = None;
        }
    }
}

/// A bar over a known number of steps (`parquet add-filters`: column chunks), drawn on standard
/// error when it is a terminal, bars are wanted and the work has run for a second (short runs
/// stay silent).
#[cfg_attr(not(feature = "parquet"), allow(dead_code))]
pub struct Steps {
    enabled: bool,
    what: &'static str,
    start: Instant,
    bar: Option<ProgressBar>,
}

#[cfg_attr(not(feature = "parquet"), allow(dead_code))]
impl Steps {
    /// A bar of `what` (`"column chunks"`) that draws only when `wanted` and standard error is
    /// a terminal.
    pub fn new(wanted: bool, what: &'static str) -> Steps {
        Steps {
            enabled: wanted && std::io::stderr().is_terminal(),
            what,
            start: Instant::now(),
            bar: None,
        }
    }

    /// Shows `done` of `total` steps (the hook: `&mut |d, t| steps.update(d, t)`).
    pub fn update(&mut self, done: usize, total: usize) {
        if !self.enabled || total == 0 {
            return;
        }
        if self.bar.is_none() && self.start.elapsed() >= Duration::from_secs(1) {
            let template = format!(
                "{{msg}} [{{bar:30}}] {{pos}}/{{len}} {} (eta {{eta}})",
                self.what
            );
            let style = ProgressStyle::with_template(&template)
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            let bar = ProgressBar::new(total as u64);
            bar.set_style(style);
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            bar.set_position(done as u64);
            if done >= total {
                bar.finish_and_clear();
                self.bar = None;
                self.enabled = false;
            }
        }
    }
}

fn new_bar(p: Progress) -> ProgressBar {
    let (len, template) = if p.bytes_total > 0 {
        (
            p.bytes_total,
            "{msg} [{bar:30}] {binary_bytes}/{binary_total_bytes} (eta {eta})",
        )
    } else if p.total > 0 {
        (
            p.total,
            "{msg} [{bar:30}] {human_pos}/{human_len} keys (eta {eta})",
        )
    } else {
        (0, "{spinner} {msg} ({elapsed})")
    };
    let bar = if len > 0 {
        ProgressBar::new(len)
    } else {
        let b = ProgressBar::new_spinner();
        b.enable_steady_tick(Duration::from_millis(200));
        b
    };
    let style = ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(p.stage.name());
    bar
}

#[cfg(test)]
mod tests {
    use super::human_rate;

    #[test]
    fn rates_read_as_people_write_them() {
        assert_eq!(human_rate(12_345_678.0, true), "12.3 Mpps");
        assert_eq!(human_rate(45_600_000.0, false), "45.6 M keys/s");
        assert_eq!(human_rate(1_500.0, false), "1.5 k keys/s");
        assert_eq!(human_rate(12.0, false), "12.0 keys/s");
    }
}
