//! Terminal conventions: `[hrr]` status lines on stderr, quiet/verbose,
//! colour, and the two ways out of the process.
//!
//! stdout carries the product only (DESIGN §3.3) and is written through
//! [`print`], so a full disk behind it is an error naming stdout rather than
//! the panic of `print!`. stderr is written through [`stderr_line`] and the
//! [`Ui`] methods, which drop a failed write: there is nowhere left to report
//! it, and a diagnostic must never end the process.

use std::io::{self, IsTerminal, Write};

/// When to colour output (`--color`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when stderr is a terminal and `NO_COLOR` is unset.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// How `hrr` talks to the person at the terminal.
#[derive(Clone, Debug)]
pub struct Ui {
    quiet: bool,
    verbose: bool,
    color: bool,
    stderr_tty: bool,
}

impl Ui {
    /// A `Ui` from the global flags; `NO_COLOR` (any non-empty value) turns
    /// `auto` colour off.
    pub fn new(quiet: bool, verbose: bool, color: ColorChoice) -> Self {
        let stderr_tty = std::io::stderr().is_terminal();
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let color = match color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => stderr_tty && !no_color,
        };
        Ui {
            quiet,
            verbose,
            color,
            stderr_tty,
        }
    }

    /// A silent `Ui` for library callers and tests.
    pub fn silent() -> Self {
        Ui {
            quiet: true,
            verbose: false,
            color: false,
            stderr_tty: false,
        }
    }

    /// Prints `[hrr] msg` on stderr unless `-q`.
    pub fn status(&self, msg: &str) {
        if !self.quiet {
            self.line("[hrr]", "36", msg);
        }
    }

    /// Prints `warning: msg` on stderr unless `-q`.
    pub fn warn(&self, msg: &str) {
        if !self.quiet {
            self.line("warning:", "33", msg);
        }
    }

    /// Prints `msg` on stderr only with `-v`.
    pub fn detail(&self, msg: &str) {
        if self.verbose && !self.quiet {
            stderr_line(&inert(msg));
        }
    }

    /// One `tag msg` line: `msg` (which may hold archive paths and names)
    /// stays on that line with its control characters made visible.
    fn line(&self, tag: &str, sgr: &str, msg: &str) {
        let msg = crate::error::single_line(msg);
        if self.color {
            stderr_line(&format!("\x1b[{sgr}m{tag}\x1b[0m {msg}"));
        } else {
            stderr_line(&format!("{tag} {msg}"));
        }
    }

    /// `-v` was given.
    pub fn verbose(&self) -> bool {
        self.verbose
    }

    /// `-q` was given.
    pub fn quiet(&self) -> bool {
        self.quiet
    }

    /// Colour is on for stderr.
    pub fn color(&self) -> bool {
        self.color
    }

    /// stderr is a terminal (progress displays only appear then).
    pub fn stderr_is_tty(&self) -> bool {
        self.stderr_tty
    }
}

/// Writes `bytes` to stdout and flushes. A closed pipe is not an error (on
/// Unix `hrr … | head` ends by SIGPIPE before this sees it; elsewhere the
/// output simply stops); any other failure is [`stdout_error`].
pub fn print(bytes: impl AsRef<[u8]>) -> anyhow::Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(bytes.as_ref()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(stdout_error(e)),
        _ => Ok(()),
    }
}

/// A failed write to stdout as an error that says so; the `io::Error` stays
/// in the chain, so [`crate::error::one_line`] can say when the disk is full.
pub fn stdout_error(e: io::Error) -> anyhow::Error {
    anyhow::Error::new(e).context("cannot write the output to stdout")
}

/// Writes `text` and a newline to stderr; a failed write is dropped.
pub fn stderr_line(text: &str) {
    let _ = writeln!(io::stderr().lock(), "{text}");
}

/// `text` with every control character except newline and tab replaced by
/// its `\u{..}` escape, so strings from archives and logs (kernel names,
/// paths) cannot move the cursor or recolour a terminal.
pub fn inert(text: &str) -> String {
    if !text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return text.to_string();
    }
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
    fn escapes_terminal_control_sequences() {
        assert_eq!(inert("k\x1b[2Jx"), "k\\u{1b}[2Jx");
        assert_eq!(inert("a\rb"), "a\\u{d}b");
        assert_eq!(inert("plain\tname\n"), "plain\tname\n");
    }
}
