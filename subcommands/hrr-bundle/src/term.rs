//! stderr conventions: warnings, the summary line, the progress bar.
//!
//! stdout carries the product only (the bundle path, the verify report);
//! everything here goes to stderr.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// How `hrr bundle` talks on stderr.
#[derive(Clone, Copy, Debug)]
pub struct Ui {
    quiet: bool,
}

impl Ui {
    /// A `Ui` that stays silent except for errors when `quiet`.
    pub fn new(quiet: bool) -> Ui {
        Ui { quiet }
    }

    /// Prints `warning: msg` on stderr unless quiet.
    pub fn warn(&self, msg: &str) {
        if !self.quiet {
            eprintln!("warning: {}", inert(msg));
        }
    }

    /// Prints `[hrr-bundle] msg` on stderr unless quiet.
    pub fn status(&self, msg: &str) {
        if !self.quiet {
            eprintln!("[hrr-bundle] {}", inert(msg));
        }
    }

    /// A byte-sized progress bar on stderr when it is a terminal (and not
    /// quiet); a hidden one otherwise, so callers need not care.
    pub fn progress(&self, total_bytes: u64, what: &'static str) -> ProgressBar {
        if self.quiet || !std::io::stderr().is_terminal() {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::new(total_bytes);
        let style = ProgressStyle::with_template(
            "{msg:8} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        )
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message(what);
        bar
    }
}

/// `text` with every control character except newline and tab replaced by
/// its `\u{..}` escape: file names inside archives and bundles are untrusted
/// and must not move the cursor or recolour a terminal.
pub fn inert(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::inert;

    #[test]
    fn control_characters_are_escaped_and_text_kept() {
        assert_eq!(inert("pid-1/\x1b[31mred"), "pid-1/\\u{1b}[31mred");
        assert_eq!(inert("plain é\tok"), "plain é\tok");
    }
}
