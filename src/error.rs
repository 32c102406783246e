//! Errors that carry their own exit code.
//!
//! Every command returns `anyhow::Result<i32>`. A plain error exits 1 (DESIGN
//! §3.1); a [`Failure`] carries another documented code (2 = confirmation
//! needed, 3 = declined, …). `main` prints one `error:` line either way.

use std::fmt;

/// An error whose process exit code is not the default 1.
#[derive(Debug)]
pub struct Failure {
    code: i32,
    message: String,
}

impl Failure {
    /// An error that makes `hrr` exit with `code` after printing `message`.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// The exit code this failure asks for.
    pub fn code(&self) -> i32 {
        self.code
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// The exit code for an error: the code of a [`Failure`] anywhere in its
/// chain, else 1.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    err.chain()
        .find_map(|e| e.downcast_ref::<Failure>())
        .map_or(1, Failure::code)
}

/// The one-line message printed after `error: `: the error chain joined with
/// `: `, with control characters made visible and line breaks written as
/// `\n`, so an archive- or script-controlled string cannot forge terminal
/// output or a second `error:` line.
pub fn one_line(err: &anyhow::Error) -> String {
    let mut text = format!("{err:#}");
    if disk_full(err) {
        text.push_str("; the disk it is written to is full");
    }
    single_line(&text)
}

/// A write in the chain of `err` failed for lack of space (ENOSPC), which
/// the OS words as "No space left on device", naming no disk.
fn disk_full(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|e| e.downcast_ref::<std::io::Error>())
        .any(|e| e.kind() == std::io::ErrorKind::StorageFull)
}

/// `text` made inert ([`crate::ui::inert`]) and folded onto one line.
pub fn single_line(text: &str) -> String {
    crate::ui::inert(text.trim_end()).replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn a_full_disk_is_named_after_the_os_message() {
        let err = anyhow::Error::new(std::io::Error::from_raw_os_error(28))
            .context("cannot write /work/x.finding.md");
        assert_eq!(
            one_line(&err),
            "cannot write /work/x.finding.md: No space left on device (os error 28); the disk it is written to is full"
        );
    }

    #[test]
    fn the_message_is_one_inert_line() {
        let err = anyhow::anyhow!("boom\nerror: forged\x1b[2J\n");
        assert_eq!(one_line(&err), "boom\\nerror: forged\\u{1b}[2J");
        let err = Failure::new(2, "ask").into();
        assert_eq!((exit_code(&err), one_line(&err)), (2, "ask".to_string()));
    }
}
