//! `--info` and `--version` in the shapes of reference playback-output.md §2a
//! and §2k, with the numbers hrr's reader decodes from the archive (see
//! [`super::model`]).

use std::collections::BTreeMap;
use std::path::Path;

use super::model::{clip, dims_text, Archive, Launch};
use super::output::{err, CStdout};

/// Rows of the `Kernel Summary` table before `... and N more`.
const SUMMARY_ROWS: usize = 20;

/// Prints the `--version` block (§2k, §10.5): stdout, flushed, exit 0. The
/// format version is `HRR_TEST_READER_VERSION` (default 7, the synthetic
/// archives' version). With `HRR_TEST_VERSION_ABORT` set, loading the
/// runtime aborts after the flushed identity lines, before the `hip runtime
/// version` line.
pub fn version(out: &mut CStdout) {
    let reader = std::env::var("HRR_TEST_READER_VERSION").unwrap_or_else(|_| "7".into());
    out.line("hrr-playback (HIP Record & Replay)");
    out.line(&format!("  archive format version : {reader}"));
    out.line("  source revision        : 3f2a9c1");
    out.line("  source branch          : develop");
    out.line("  build type             : Release");
    // The real player flushes here: loading the runtime for the next line
    // can abort (§10.5).
    out.flush();
    if std::env::var_os("HRR_TEST_VERSION_ABORT").is_some() {
        super::output::abort();
    }
    out.line("  hip runtime version    : unavailable");
    out.flush();
}

/// Prints the single-process `--info` report for `archive` (§2a): the
/// reader diagnostics on stderr, then the report on stdout.
pub fn process(out: &mut CStdout, archive: &Archive) {
    for line in archive.reader_diagnostics() {
        err(&line);
    }
    let kernels: Vec<&Launch> = archive.counted_launches().collect();
    out.line(&format!("HRR Archive: {}", archive.path.display()));
    out.line(&"=".repeat(40));
    out.line(&format!("Complete:     {}", archive.complete_text()));
    out.line(&format!("Recovered:    {} events", archive.events));
    out.line(&format!("Events:       {}", archive.events));
    out.line(&format!("Kernels:      {}", kernels.len()));
    out.line(&format!("Blobs:        {}", archive.blobs));
    out.line(&format!("Code Objects: {}", archive.code_objects));
    out.line(&format!("Threads:      {}", archive.threads));
    out.line("");
    out.line("Event Type Breakdown:");
    out.line(&format!("  {:<22} {}", "Type", "Count"));
    out.line(&format!("  {:<22} {}", "----", "-----"));
    for (api, count) in &archive.apis {
        out.line(&format!("  {api:<22} {count}"));
    }
    out.line("");
    if kernels.is_empty() {
        return;
    }
    out.line("Kernel Summary (first 20):");
    out.line(&format!(
        "  {:<4} {:<50} {:<15} {:<15} {}",
        "ID", "Kernel", "Grid", "Block", "SharedMem"
    ));
    out.line(&format!(
        "  {:<4} {:<50} {:<15} {:<15} {}",
        "--", "------", "----", "-----", "---------"
    ));
    for (id, k) in kernels.iter().take(SUMMARY_ROWS).enumerate() {
        out.line(&format!(
            "  {:<4} {:<50} {:<15} {:<15} {}",
            id,
            clip(&k.name, 50),
            dims_text(k.grid),
            dims_text(k.block),
            k.shared
        ));
    }
    if kernels.len() > SUMMARY_ROWS {
        out.line(&format!("  ... and {} more", kernels.len() - SUMMARY_ROWS));
    }
    out.line("");
    out.line("Kernel Call Counts:");
    out.line(&format!("  {:<60} {}", "Kernel", "Calls"));
    out.line(&format!("  {:<60} {}", "------", "-----"));
    let mut calls: BTreeMap<&str, u64> = BTreeMap::new();
    for k in &kernels {
        *calls.entry(k.name.as_str()).or_default() += 1;
    }
    for (name, n) in calls {
        out.line(&format!("  {:<60} {n}", clip(name, 60)));
    }
    out.line("");
}

/// Prints the archive-root `--info` table (§2a) for the `pid-*` directories
/// of `root`, each row with the numbers hrr's reader decodes from that
/// process (its parent pid from its manifest, 0 when there is none).
pub fn root(out: &mut CStdout, root: &Path, pids: &[(u64, &Path)]) {
    let owner = std::fs::read_to_string(root.join("manifest.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|m| m.get("owner_pid").and_then(serde_json::Value::as_u64))
        .or_else(|| pids.first().map(|(p, _)| *p))
        .unwrap_or(0);
    out.line(&format!("HRR Archive Root: {}", root.display()));
    out.line(&"=".repeat(40));
    out.line("Capture Mode: in-tree");
    out.line(&format!("Owner PID:    {owner}"));
    out.line(&format!("Processes:    {}", pids.len()));
    out.line("");
    let row = |a: &str, b: &str, c: &str, d: &str, e: &str, f: &str| {
        format!("  {a:<12} {b:<12} {c:<10} {d:<12} {e:<10} {f}")
    };
    out.line(&row(
        "PID",
        "Parent PID",
        "Complete",
        "Events",
        "Blobs",
        "Path",
    ));
    out.line(&row(
        "---",
        "----------",
        "--------",
        "------",
        "-----",
        "----",
    ));
    for (pid, path) in pids {
        let (parent, complete, events, blobs) = match hrr::archive::summarize(path) {
            Ok(s) => (
                s.manifest
                    .as_ref()
                    .and_then(|m| m.get("parent_pid"))
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(0),
                s.complete,
                s.events,
                s.blobs.files,
            ),
            Err(_) => (0, false, 0, 0),
        };
        out.line(&row(
            &pid.to_string(),
            &parent.to_string(),
            if complete { "yes" } else { "NO" },
            &events.to_string(),
            &blobs.to_string(),
            &path.display().to_string(),
        ));
    }
    out.line("");
}
