//! The readable `archive info` report: health first, in plain words, then
//! totals, capture environment, APIs and kernels (full names, never
//! elided), and for a root the process table with the triage choice.

use std::fmt::Write as _;

use serde_json::Value;

use crate::archive::format::manifest::{CaptureMetadata, ProcessState};
use crate::archive::memory::MemorySection;
use crate::archive::summary::document::{ArchiveSummary, FileRefs, RootListing};

/// An archive-controlled string made safe for one line of a terminal:
/// control characters, newlines and tabs shown as escapes.
fn clean(s: &str) -> String {
    crate::ui::inert(s)
        .replace('\n', "\\n")
        .replace('\t', "\\t")
}

/// Human size: bytes below 1 KiB, else KiB/MiB/GiB with one decimal.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

fn human_duration(ns: u64) -> String {
    match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=999_999 => format!("{:.1} µs", ns as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.1} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

/// What a state means, in words.
pub fn state_words(state: ProcessState) -> &'static str {
    match state {
        ProcessState::Complete => "complete (clean shutdown)",
        ProcessState::Incomplete => {
            "incomplete (the process crashed, or the capture was marked incomplete)"
        }
        ProcessState::NotFinalized => "not finalised (no manifest: the process was killed hard)",
        ProcessState::Unknown => "unknown (the manifest cannot be read)",
    }
}

fn refs_line(r: &FileRefs) -> String {
    format!(
        "{} on disk, {} referenced, {} missing",
        r.files,
        r.referenced,
        r.missing.len()
    )
}

/// The text report of one process archive. `kernels` limits the kernel
/// rows (`None` = all).
pub fn process_text(s: &ArchiveSummary, kernels: Option<usize>) -> String {
    let mut o = String::new();
    let version = s
        .format_version
        .map_or("unreadable".to_string(), |v| v.to_string());
    let _ = writeln!(o, "HRR archive: {}", clean(&s.path));
    let _ = writeln!(
        o,
        "  pid {}, format {}, flags {}, API table {}",
        s.pid.map_or("n/a".into(), |p| p.to_string()),
        version,
        s.flags.map_or("n/a".into(), |f| format!("{f:#06x}")),
        s.api_table.as_deref().unwrap_or("n/a"),
    );
    let _ = writeln!(o, "\nHealth");
    let _ = writeln!(o, "  State:           {}", state_words(s.state));
    let _ = writeln!(
        o,
        "  Complete:        {}",
        if s.complete {
            "yes (trailer count matches the events read)"
        } else {
            "no"
        }
    );
    let trailer = match s.trailer.total_events {
        Some(n) if s.trailer.present => format!("present, counts {n} events"),
        _ => "absent (no clean shutdown)".into(),
    };
    let _ = writeln!(o, "  Trailer:         {trailer}");
    if s.truncated {
        let _ = writeln!(
            o,
            "  Truncated:       yes ({} bytes of a torn record discarded; {} events recovered)",
            s.torn_bytes, s.events
        );
    } else {
        let _ = writeln!(o, "  Truncated:       no");
    }
    if s.records_after_trailer > 0 {
        let _ = writeln!(
            o,
            "  After trailer:   {} records (not decoded)",
            s.records_after_trailer
        );
    }
    if s.problems.is_empty() {
        let _ = writeln!(o, "  Problems:        none");
    } else {
        let _ = writeln!(o, "  Problems:");
        for p in &s.problems {
            let _ = writeln!(o, "    - {} [{}]", clean(&p.detail), p.kind);
        }
    }
    for n in &s.notes {
        let _ = writeln!(o, "  Note: {n}");
    }
    if s.fatal_problem().is_some() {
        return o;
    }
    let _ = writeln!(o, "\nTotals");
    let _ = writeln!(o, "  Events:          {}", s.events);
    let _ = writeln!(o, "  Kernel launches: {}", s.kernel_launches);
    let _ = writeln!(o, "  Threads:         {}", s.threads);
    let _ = writeln!(o, "  Duration:        {}", human_duration(s.duration_ns));
    let _ = writeln!(o, "  D2H checks:      {}", s.d2h_checks);
    let _ = writeln!(o, "  Blobs:           {}", refs_line(&s.blobs));
    let _ = writeln!(o, "  Code objects:    {}", refs_line(&s.code_objects));
    let _ = writeln!(
        o,
        "  Regions:         {} streams, {} records",
        s.regions.streams, s.regions.records
    );
    for (what, refs) in [("blob", &s.blobs), ("code object", &s.code_objects)] {
        for h in &refs.missing {
            let _ = writeln!(o, "  Missing {what}: {h}");
        }
    }
    if let Some(m) = &s.memory {
        memory_lines(&mut o, m);
    }
    capture_environment(&mut o, s.manifest.as_ref(), s.capture.as_ref());
    let _ = writeln!(o, "\nAPIs");
    let width = s
        .apis
        .iter()
        .map(|a| a.name.len())
        .max()
        .unwrap_or(3)
        .max(3);
    let _ = writeln!(o, "  {:>5}  {:<width$}  Count", "ID", "API");
    for a in &s.apis {
        let _ = writeln!(o, "  {:>5}  {:<width$}  {}", a.id, a.name, a.count);
    }
    let shown = kernels.unwrap_or(usize::MAX).min(s.kernels.len());
    let _ = writeln!(o, "\nKernels ({shown} of {})", s.kernels.len());
    if !s.kernels.is_empty() {
        let _ = writeln!(o, "  {:>8}  {:<32}  Kernel", "Launches", "Code object");
        for k in s.kernels.iter().take(shown) {
            let co = k.code_object.as_deref().unwrap_or("n/a");
            let _ = writeln!(o, "  {:>8}  {:<32}  {}", k.launches, co, clean(&k.name));
        }
        if shown < s.kernels.len() {
            let _ = writeln!(
                o,
                "  … {} more (--kernels all, or --json for every full name)",
                s.kernels.len() - shown
            );
        }
    }
    o
}

/// The `memory` section in a few lines: counts, then the examples.
fn memory_lines(o: &mut String, m: &MemorySection) {
    let _ = writeln!(o, "\nMemory");
    let _ = writeln!(
        o,
        "  Allocations:     {} ({} frees), {} live at end, peak {} live",
        m.allocations,
        m.frees,
        m.live_at_end,
        human_bytes(m.peak_live_bytes)
    );
    let _ = writeln!(
        o,
        "  Pointer audit:   {} launch(es) pass a stale pointer, {} pointer argument(s) in no recorded range",
        m.stale_pointer_launches, m.unattributed_pointer_args
    );
    for e in &m.examples {
        let into = match &e.range {
            Some(r) => format!(
                " into the {}-byte {} at {} (seq {}), freed by {} at seq {}",
                r.size,
                clean(&r.api),
                r.base,
                r.alloc_seq.map_or("n/a".into(), |q| q.to_string()),
                r.freed_by.as_deref().map_or("n/a".into(), clean),
                r.free_seq.map_or("n/a".into(), |q| q.to_string()),
            ),
            None => " in no recorded range".into(),
        };
        let what = if e.kind == "stale_pointer" {
            "stale"
        } else {
            "unattributed"
        };
        let _ = writeln!(
            o,
            "    - {what}: launch seq {} {} arg {} = {}{into}",
            e.launch_seq,
            clean(&e.kernel),
            e.argument,
            e.address
        );
    }
}

fn capture_environment(
    o: &mut String,
    manifest: Option<&Value>,
    capture: Option<&CaptureMetadata>,
) {
    let Some(m) = manifest else {
        let _ = writeln!(o, "\nCapture environment\n  n/a (no manifest)");
        return;
    };
    let _ = writeln!(o, "\nCapture environment");
    match capture {
        None => {
            let _ = writeln!(
                o,
                "  n/a (the manifest has no metadata: an older writer, --repair, or collection failed)"
            );
        }
        Some(md) => {
            let text = |v: &Option<String>| v.as_deref().map_or_else(|| "n/a".to_string(), clean);
            let count = |n: Option<u64>| n.map_or_else(|| "n/a".to_string(), |c| c.to_string());
            let _ = writeln!(o, "  HIP runtime:     {}", text(&md.hip_runtime_version));
            let _ = writeln!(o, "  comgr:           {}", text(&md.comgr_version));
            let _ = writeln!(
                o,
                "  Devices:         {} ({} captured)",
                count(md.device_count),
                count(md.captured_device_count)
            );
            for d in &md.devices {
                let _ = writeln!(
                    o,
                    "    [{}] {}  {}",
                    d.ordinal.map_or_else(|| "?".to_string(), |n| n.to_string()),
                    text(&d.name),
                    text(&d.gcn_arch_name)
                );
            }
        }
    }
    if let Some(Value::Object(apis)) = m.get("unreplayable_apis") {
        let _ = writeln!(o, "  Unreplayable APIs (capture dropped or degraded them):");
        for (name, reasons) in apis {
            let reasons: Vec<String> = reasons
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| clean(&r.as_str().map_or_else(|| r.to_string(), str::to_string)))
                .collect();
            let _ = writeln!(o, "    {}: {}", clean(name), reasons.join("; "));
        }
    }
}

/// The text report of a capture root: the process table and the choice.
pub fn root_text(r: &RootListing) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "HRR capture root: {}", clean(&r.path));
    let _ = writeln!(o, "Processes: {}\n", r.processes.len());
    let _ = writeln!(
        o,
        "  {:>8}  {:>8}  {:<14}  {:>8}  {:>6}  {:>10}",
        "PID", "Parent", "State", "Events", "Blobs", "events.bin"
    );
    for p in &r.processes {
        let _ = writeln!(
            o,
            "  {:>8}  {:>8}  {:<14}  {:>8}  {:>6}  {:>10}",
            p.pid,
            p.parent_pid.map_or("n/a".into(), |x| x.to_string()),
            p.state.as_str(),
            p.events,
            p.blobs,
            human_bytes(p.events_bin_bytes)
        );
    }
    if let Some(pid) = r.chosen {
        let _ = writeln!(o, "\nTriage would pick pid {pid}: {}.", r.reason);
        let process = std::path::Path::new(&r.path).join(format!("pid-{pid}"));
        let _ = writeln!(
            o,
            "Details: hrr archive info {}",
            clean(&process.display().to_string())
        );
    }
    if !r.leftovers.is_empty() {
        let _ = writeln!(o, "\nLeftovers (no events.bin, never chosen):");
        for l in &r.leftovers {
            let _ = writeln!(o, "  {}", clean(l));
        }
    }
    if !r.problems.is_empty() {
        let _ = writeln!(o, "\nProblems:");
        for p in &r.problems {
            let _ = writeln!(o, "  - {} [{}]", clean(&p.detail), p.kind);
        }
    }
    let _ = writeln!(
        o,
        "\nStates: complete = clean shutdown; incomplete = crashed (manifest complete: false); not_finalized = killed hard (no manifest); unknown = unreadable manifest."
    );
    o
}
