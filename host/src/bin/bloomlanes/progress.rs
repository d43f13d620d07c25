//! Progress bars for the library's [`Progress`] hook: drawn with indicatif on standard error when
//! it is a terminal and bars are wanted, nothing otherwise.

use std::io::IsTerminal;

use bloomlanes_host::Progress;
use indicatif::{ProgressBar, ProgressStyle};

/// One bar at a time, started by the first report of a stage and cleared by its last.
pub struct Bar {
    enabled: bool,
    bar: Option<ProgressBar>,
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
        if p.done == 0 || self.bar.is_none() {
            self.bar = Some(new_bar(p));
        }
        if let Some(bar) = &self.bar {
            bar.set_position(p.done);
            if p.done >= p.total {
                bar.finish_and_clear();
                self.bar = None;
            }
        }
    }
}

fn new_bar(p: Progress) -> ProgressBar {
    let bar = ProgressBar::new(p.total);
    let style = ProgressStyle::with_template(
        "{msg:>10} [{bar:40}] {human_pos}/{human_len} keys ({per_sec}, eta {eta})",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(p.stage.name());
    bar
}
