//! Progress notifications of one tool call: each `[hrr]` status line the
//! command prints becomes one notification, when the client asked for
//! progress (it sent a progress token with the call).

use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};

/// Where a call's status lines go: to the client that asked, or nowhere.
#[derive(Debug)]
pub struct Progress {
    target: Option<(Peer<RoleServer>, ProgressToken)>,
    lines: AtomicU64,
}

impl Progress {
    /// The progress channel of the call `ctx` belongs to.
    pub fn of(ctx: &RequestContext<RoleServer>) -> Progress {
        Progress {
            target: ctx
                .meta
                .get_progress_token()
                .map(|token| (ctx.peer.clone(), token)),
            lines: AtomicU64::new(0),
        }
    }

    /// Whether the client asked for progress.
    pub fn wanted(&self) -> bool {
        self.target.is_some()
    }

    /// Sends `line` as the next notification: progress is the count of lines
    /// so far (no total: how many a triage prints is not known ahead). A
    /// client gone away is not an error here; the call's answer will fail.
    pub async fn report(&self, line: &str) {
        let n = self.lines.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some((peer, token)) = &self.target {
            let param = ProgressNotificationParam::new(token.clone(), n as f64).with_message(line);
            let _ = peer.notify_progress(param).await;
        }
    }
}
