//! `hrr mcp`: serve `hrr`'s tools to an agent over the Model Context
//! Protocol on stdio (see [`crate::mcp`]).

use crate::cli::{GlobalArgs, McpArgs};

/// Serves until the client disconnects; `--call-timeout 0` lifts the limit
/// of one call.
pub fn run(global: &GlobalArgs, args: &McpArgs) -> anyhow::Result<i32> {
    let limit = (!args.call_timeout.is_zero()).then_some(args.call_timeout);
    crate::mcp::serve(global, limit)
}
