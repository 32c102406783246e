//! What every command receives: the effective config and the terminal.

use crate::config::Config;
use crate::ui::Ui;

/// The effective configuration and the terminal conventions of one `hrr` run.
#[derive(Clone, Debug)]
pub struct Context {
    /// The layered configuration (DESIGN §4).
    pub config: Config,
    /// Status lines, verbosity, colour.
    pub ui: Ui,
}
