//! The five tools `hrr mcp` serves. Each one runs the equivalent `hrr`
//! command (see [`super::params`]) and answers its JSON, so a tool's result
//! is what the CLI prints.

use std::ffi::OsString;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, RoleServer, ServerHandler};

use super::output::{self, Shape};
use super::params::{
    ArchiveEventsParams, ArchiveInfoParams, ClassifyParams, PreflightParams, TriageParams,
};
use super::progress::Progress;
use super::subprocess::Runner;
use hrr::schema::Document;

/// The MCP server: the tool router and how `hrr` is run for each call.
#[derive(Debug, Clone)]
pub struct HrrTools {
    runner: Runner,
    tool_router: ToolRouter<HrrTools>,
}

#[tool_router]
impl HrrTools {
    /// A server whose tools run `hrr` as `runner` says.
    pub fn new(runner: Runner) -> HrrTools {
        HrrTools {
            runner,
            tool_router: Self::tool_router(),
        }
    }

    async fn call(
        &self,
        argv: Vec<OsString>,
        shape: Shape,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let progress = Progress::of(&ctx);
        let run = self.runner.run(argv, &progress, ctx.ct.cancelled()).await;
        output::result(run, shape)
    }

    #[tool(
        description = "Triage an HRR capture archive: decode it, check this host can replay it, replay it (unless no_replay), classify what happened and say which kernel faulted and what to do next. Answers the finding (with `all`: {\"findings\": [...]}, one per process). Status lines come as progress notifications when a progress token is sent.",
        output_schema = output::findings_schema()
    )]
    async fn triage(
        &self,
        Parameters(p): Parameters<TriageParams>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        self.call(p.argv(), Shape::Findings, ctx).await
    }

    #[tool(
        description = "Decode an archive without ROCm: health, totals, APIs, kernels, blobs, D2H checks; on a capture root with several processes, the process table and the one triage would pick.",
        output_schema = output::document_schema(Document::ArchiveInfo),
        annotations(read_only_hint = true)
    )]
    async fn archive_info(
        &self,
        Parameters(p): Parameters<ArchiveInfoParams>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        self.call(p.argv(), Shape::Object, ctx).await
    }

    #[tool(
        description = "Decoded events of a process archive in file order, as {\"events\": [...]}: at most `limit` (default 1000), from sequence id `from`, optionally only one API.",
        output_schema = output::events_schema(),
        annotations(read_only_hint = true)
    )]
    async fn archive_events(
        &self,
        Parameters(p): Parameters<ArchiveEventsParams>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        self.call(p.argv(), Shape::Events, ctx).await
    }

    #[tool(
        description = "Can this host (or a docker image) replay the archive faithfully? GPU count, requested GPU, arch, HIP runtime and comgr versions: status ok, warn, confirm or blocked, with the reasons.",
        output_schema = output::document_schema(Document::Preflight),
        annotations(read_only_hint = true)
    )]
    async fn preflight(
        &self,
        Parameters(p): Parameters<PreflightParams>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        self.call(p.argv(), Shape::Object, ctx).await
    }

    #[tool(
        description = "Classify replay logs (and optionally the archive they came from) into a finding, without replaying.",
        output_schema = output::document_schema(Document::Finding),
        annotations(read_only_hint = true)
    )]
    async fn classify(
        &self,
        Parameters(p): Parameters<ClassifyParams>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        self.call(p.argv(), Shape::Object, ctx).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for HrrTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("hrr", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "hrr triages HRR (HIP Record & Replay) capture archives of AMD GPU workloads. \
                 Start with `triage` (no_replay: true on a host without an AMD GPU); \
                 `archive_info`, `archive_events` and `preflight` look closer. Never modify the \
                 archive.",
            )
    }
}
