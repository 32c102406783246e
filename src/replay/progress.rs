//! The terminal progress line driven by the player's `[HRR progress]` lines
//! (reference playback-output.md §2c). Only on a terminal; never in the log.

use std::time::Duration;

/// How every progress line starts.
pub const PREFIX: &str = "[HRR progress]";

/// One parsed `[HRR progress]` line.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgressLine {
    /// Seconds since the player's first progress line.
    pub elapsed_s: f64,
    /// Kernels launched so far.
    pub kernels: u64,
    /// D2H checks that passed.
    pub d2h_pass: u64,
    /// D2H checks that failed.
    pub d2h_fail: u64,
    /// D2H checks attempted.
    pub d2h_attempted: u64,
    /// The last completed kernel (possibly shortened by the player).
    pub last: String,
}

/// Parses `[HRR progress] elapsed_s=%.1f seq=%llu kernels=%zu d2h_pass=%zu
/// d2h_fail=%zu d2h_attempted=%zu last="%s"`; `None` for anything else.
pub fn parse(line: &str) -> Option<ProgressLine> {
    let body = line.strip_prefix(PREFIX)?;
    let (fields, last) = body.split_once(" last=\"")?;
    let last = last.strip_suffix('"')?;
    let mut p = ProgressLine {
        elapsed_s: 0.0,
        kernels: 0,
        d2h_pass: 0,
        d2h_fail: 0,
        d2h_attempted: 0,
        last: last.to_string(),
    };
    for field in fields.split_whitespace() {
        let (key, value) = field.split_once('=')?;
        match key {
            "elapsed_s" => p.elapsed_s = value.parse().ok()?,
            "kernels" => p.kernels = value.parse().ok()?,
            "d2h_pass" => p.d2h_pass = value.parse().ok()?,
            "d2h_fail" => p.d2h_fail = value.parse().ok()?,
            "d2h_attempted" => p.d2h_attempted = value.parse().ok()?,
            _ => {}
        }
    }
    Some(p)
}

/// The progress line under the cursor on stderr.
pub struct Display {
    bar: indicatif::ProgressBar,
}

impl Display {
    /// A spinner with the runner's own elapsed time, waiting for the first
    /// progress line.
    pub fn new() -> Display {
        let bar =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        let style = indicatif::ProgressStyle::with_template("{spinner} replay {elapsed} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.set_message("starting…");
        bar.enable_steady_tick(Duration::from_millis(250));
        Display { bar }
    }

    /// Shows the counters of `p`.
    pub fn update(&self, p: &ProgressLine) {
        self.bar.set_message(message(p));
    }

    /// Prints `text` above the progress line.
    pub fn println(&self, text: &str) {
        self.bar.suspend(|| crate::ui::stderr_line(text));
    }

    /// Removes the progress line.
    pub fn clear(self) {
        self.bar.finish_and_clear();
    }
}

/// `kernels 812 · D2H 30 pass / 0 fail of 31 · last <name>`; the kernel name
/// is made inert and cut to 60 characters.
fn message(p: &ProgressLine) -> String {
    let mut last = crate::ui::inert(&p.last);
    if last.chars().count() > 60 {
        last = last.chars().take(59).collect::<String>() + "…";
    }
    format!(
        "kernels {} · D2H {} pass / {} fail of {} · last {last}",
        p.kernels, p.d2h_pass, p.d2h_fail, p.d2h_attempted
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_reference_progress_line() {
        let line = r#"[HRR progress] elapsed_s=612.4 seq=13118764 kernels=797227 d2h_pass=4303 d2h_fail=0 d2h_attempted=4315 last="Cijk_Ailk_Bljk_BBS_BH_…""#;
        let p = parse(line).unwrap();
        assert_eq!(p.elapsed_s, 612.4);
        assert_eq!(
            (p.kernels, p.d2h_pass, p.d2h_fail, p.d2h_attempted),
            (797227, 4303, 0, 4315)
        );
        assert_eq!(p.last, "Cijk_Ailk_Bljk_BBS_BH_…");
        assert_eq!(
            message(&p),
            "kernels 797227 · D2H 4303 pass / 0 fail of 4315 · last Cijk_Ailk_Bljk_BBS_BH_…"
        );
    }

    #[test]
    fn kernel_names_with_spaces_and_other_lines() {
        let p = parse(r#"[HRR progress] elapsed_s=0.0 seq=19 kernels=1 d2h_pass=0 d2h_fail=0 d2h_attempted=0 last="void k<int, 4>(int*)""#).unwrap();
        assert_eq!(p.last, "void k<int, 4>(int*)");
        assert!(parse("[HRR] Archive : 5 events, 1 kernels, 1 blobs, 2 code objects").is_none());
        assert!(parse("[HRR progress] elapsed_s=x last=\"k\"").is_none());
    }
}
