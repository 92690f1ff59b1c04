//! How far a seeding run has got: a bar on a terminal, plain lines in a log.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Where a seeding run reports its progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Nowhere (`serve --demo`, tests).
    Hidden,
    /// On standard error: a progress bar when it is a terminal, otherwise a
    /// line at each tenth of the products and at least every
    /// [`LINE_EVERY`].
    Stderr,
}

/// Longest time between two plain progress lines.
const LINE_EVERY: Duration = Duration::from_secs(10);

/// The progress of one run.
pub(super) enum Meter {
    Hidden,
    Bar(ProgressBar),
    Lines {
        total: u64,
        done: u64,
        started: Instant,
        last_line: Instant,
        last_tenth: u64,
    },
}

impl Meter {
    pub fn new(progress: Progress, total: u64) -> Self {
        match progress {
            Progress::Hidden => Meter::Hidden,
            Progress::Stderr if std::io::stderr().is_terminal() => {
                let bar = ProgressBar::new(total).with_style(
                    ProgressStyle::with_template(
                        "{msg:>18} [{bar:40}] {human_pos}/{human_len} products, \
                         {per_sec}, {elapsed} elapsed, {eta} left",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
                );
                bar.set_message("loading");
                bar.enable_steady_tick(Duration::from_millis(200));
                Meter::Bar(bar)
            }
            Progress::Stderr => Meter::Lines {
                total,
                done: 0,
                started: Instant::now(),
                last_line: Instant::now(),
                last_tenth: 0,
            },
        }
    }

    /// `products` more are written.
    pub fn advance(&mut self, products: u64) {
        match self {
            Meter::Hidden => {}
            Meter::Bar(bar) => bar.inc(products),
            Meter::Lines {
                total,
                done,
                started,
                last_line,
                last_tenth,
            } => {
                *done += products;
                let tenth = (*done * 10).checked_div(*total).unwrap_or(10);
                if tenth > *last_tenth || last_line.elapsed() >= LINE_EVERY {
                    let seconds = started.elapsed().as_secs_f64().max(0.001);
                    eprintln!(
                        "seed: {done} of {total} products ({}%), {:.0} products/s",
                        (*done * 100).checked_div(*total).unwrap_or(100),
                        *done as f64 / seconds
                    );
                    *last_tenth = tenth;
                    *last_line = Instant::now();
                }
            }
        }
    }

    /// The run goes on to `step` (building indexes, snapshots, ...).
    pub fn step(&self, step: &'static str) {
        match self {
            Meter::Hidden => {}
            Meter::Bar(bar) => bar.set_message(step),
            Meter::Lines { .. } => eprintln!("seed: {step}"),
        }
    }

    pub fn finish(&self) {
        if let Meter::Bar(bar) = self {
            bar.finish_with_message("done");
        }
    }
}
