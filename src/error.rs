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
/// `: `, with control characters made visible so an archive-controlled string
/// cannot forge terminal output.
pub fn one_line(err: &anyhow::Error) -> String {
    crate::ui::inert(&format!("{err:#}"))
}
