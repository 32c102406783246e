//! `--info` and `--version` in the shapes of reference playback-output.md §2a
//! and §2k. The archive content is the player's fixed model (see
//! [`super::model`]), not decoded from `events.bin`.

use std::path::Path;

use super::model::Archive;
use super::output::CStdout;

/// Prints the `--version` block (§2k): stdout, flushed, exit 0. The format
/// version is `HRR_TEST_READER_VERSION` (default 7, the synthetic archives'
/// version).
pub fn version(out: &mut CStdout) {
    let reader = std::env::var("HRR_TEST_READER_VERSION").unwrap_or_else(|_| "7".into());
    out.line("hrr-playback (HIP Record & Replay)");
    out.line(&format!("  archive format version : {reader}"));
    out.line("  source revision        : 3f2a9c1");
    out.line("  source branch          : develop");
    out.line("  build type             : Release");
    out.line("  hip runtime version    : unavailable");
    out.flush();
}

/// Prints the single-process `--info` report for `archive` at `path`.
pub fn process(out: &mut CStdout, path: &Path, archive: &Archive) {
    if archive.crashed {
        super::output::err(&format!(
            "[HRR] Archive has no clean-shutdown trailer (capture likely crashed); recovered {} events",
            archive.events
        ));
    }
    out.line(&format!("HRR Archive: {}", path.display()));
    out.line(&"=".repeat(40));
    out.line(if archive.crashed {
        "Complete:     NO (no shutdown trailer; capture likely crashed)"
    } else {
        "Complete:     yes (clean shutdown)"
    });
    out.line(&format!("Recovered:    {} events", archive.events));
    out.line(&format!("Events:       {}", archive.events));
    out.line(&format!("Kernels:      {}", archive.kernels.len()));
    out.line(&format!("Blobs:        {}", archive.blobs));
    out.line(&format!("Code Objects: {}", archive.code_objects));
    out.line("Threads:      1");
    out.line("");
    out.line("Event Type Breakdown:");
    out.line(&format!("  {:<22} {}", "Type", "Count"));
    out.line(&format!("  {:<22} {}", "----", "-----"));
    for (api, count) in archive.apis {
        out.line(&format!("  {api:<22} {count}"));
    }
    out.line("");
    out.line("Kernel Summary (first 20):");
    out.line(&format!(
        "  {:<4} {:<50} {:<15} {:<15} {}",
        "ID", "Kernel", "Grid", "Block", "SharedMem"
    ));
    out.line(&format!(
        "  {:<4} {:<50} {:<15} {:<15} {}",
        "--", "------", "----", "-----", "---------"
    ));
    for (id, k) in archive.kernels.iter().enumerate() {
        out.line(&format!(
            "  {:<4} {:<50} {:<15} {:<15} {}",
            id,
            k.name,
            format!("[{},1,1]", k.grid),
            format!("[{},1,1]", k.block),
            0
        ));
    }
    out.line("");
    out.line("Kernel Call Counts:");
    out.line(&format!("  {:<60} {}", "Kernel", "Calls"));
    out.line(&format!("  {:<60} {}", "------", "-----"));
    let mut names: Vec<&str> = archive.kernels.iter().map(|k| k.name).collect();
    names.sort_unstable();
    for name in names {
        out.line(&format!("  {name:<60} 1"));
    }
    out.line("");
}

/// Prints the archive-root `--info` table for the `pid-*` directories of
/// `root` (each shown complete with the model's counts).
pub fn root(out: &mut CStdout, root: &Path, pids: &[(u64, &Path)], archive: &Archive) {
    out.line(&format!("HRR Archive Root: {}", root.display()));
    out.line(&"=".repeat(40));
    out.line("Capture Mode: in-tree");
    out.line(&format!(
        "Owner PID:    {}",
        pids.first().map_or(0, |(p, _)| *p)
    ));
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
        out.line(&row(
            &pid.to_string(),
            "1",
            if archive.crashed { "NO" } else { "yes" },
            &archive.events.to_string(),
            &archive.blobs.to_string(),
            &path.display().to_string(),
        ));
    }
    out.line("");
}
