//! `hrr mcp`: a Model Context Protocol server on stdin/stdout (JSON-RPC by
//! the official Rust SDK), for agents that call tools rather than commands.
//!
//! Every tool runs `hrr` itself as a child process with the equivalent
//! command line and `--format json`/`--json`, and answers the JSON it
//! prints ([`subprocess`]). So a tool's result is exactly the CLI's, the
//! triage workflow's own stdout never reaches the MCP channel, and a hostile
//! archive or a hang costs one call, not the server.

mod output;
mod params;
mod progress;
mod subprocess;
mod tools;

use std::ffi::OsString;
use std::time::Duration;

use anyhow::Context as _;
use rmcp::ServiceExt;

use crate::cli::GlobalArgs;

/// Serves the tools on stdio until the client closes the connection. The
/// global flags `hrr mcp` was given (`--config`, `--profile`, `-c`) apply
/// to every call; one call may take `call_limit` (`None`: no limit).
pub fn serve(global: &GlobalArgs, call_limit: Option<Duration>) -> anyhow::Result<i32> {
    let runner = subprocess::Runner {
        exe: std::env::current_exe().context("where is the running hrr")?,
        global: global_flags(global),
        limit: call_limit,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the MCP server's runtime")?;
    runtime.block_on(async {
        let service = tools::HrrTools::new(runner)
            .serve(rmcp::transport::stdio())
            .await
            .context("MCP initialization with the client failed")?;
        service.waiting().await.context("the MCP server stopped")?;
        Ok(0)
    })
}

/// The flags every child `hrr` gets: the server's config choices, and no
/// colour (its stderr is read, not shown).
fn global_flags(global: &GlobalArgs) -> Vec<OsString> {
    let mut flags: Vec<OsString> = vec!["--color=never".into()];
    if let Some(file) = &global.config {
        let mut word = OsString::from("--config=");
        word.push(file);
        flags.push(word);
    }
    if let Some(profile) = &global.profile {
        flags.push(format!("--profile={profile}").into());
    }
    flags.extend(global.set.iter().map(|kv| format!("--set={kv}").into()));
    flags
}
