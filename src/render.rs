//! A [`Finding`] as markdown (the chat template of DESIGN §6, then details)
//! or as pretty JSON (the stable schema).
//!
//! Markdown is a pure function of the finding, so `hrr render` of a saved
//! JSON finding prints exactly what triage printed. Zero prints as `0`,
//! unknown as `n/a`; every archive-controlled string goes through [`inert`].

pub(crate) mod inert;
mod summary;

pub use summary::summary;

use crate::finding::{FaultClass, Finding, KernelSource, Outcome, Placement};
use anyhow::Context as _;
use serde_json::Value;
use std::fmt::Write as _;
use std::str::FromStr;

/// Output format of a finding (`--format` of the commands that print one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// The chat template, then details.
    #[default]
    Markdown,
    /// The stable JSON schema.
    Json,
    /// The JSON schema on one compact line (JSON Lines), one line per
    /// finding.
    Jsonl,
}

impl Format {
    /// The config value (`output.format`) and flag word of this format.
    pub fn name(self) -> &'static str {
        match self {
            Format::Markdown => "markdown",
            Format::Json => "json",
            Format::Jsonl => "jsonl",
        }
    }

    /// The format a command prints in: its `--format` flag when given, else
    /// config `output.format`, else markdown.
    pub fn chosen(config: &crate::config::Config, flag: Option<Format>) -> anyhow::Result<Format> {
        match flag {
            Some(format) => Ok(format),
            None => config
                .str("output.format")
                .unwrap_or("markdown")
                .parse()
                .context("config output.format"),
        }
    }
}

impl FromStr for Format {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> anyhow::Result<Format> {
        match s {
            "markdown" | "md" => Ok(Format::Markdown),
            "json" => Ok(Format::Json),
            "jsonl" => Ok(Format::Jsonl),
            other => anyhow::bail!("unknown format `{other}` (use markdown, json or jsonl)"),
        }
    }
}

/// Render `f` in `format`.
pub fn render(f: &Finding, format: Format) -> String {
    match format {
        Format::Markdown => markdown(f),
        Format::Json => json(f),
        Format::Jsonl => json_line(f),
    }
}

/// Compact JSON on one line with a trailing newline: one line of JSON Lines.
pub fn json_line(f: &Finding) -> String {
    let mut s = serde_json::to_string(f).expect("a Finding always serialises");
    s.push('\n');
    s
}

/// Pretty JSON with a trailing newline.
pub fn json(f: &Finding) -> String {
    f.to_json_pretty()
}

/// How an unknown value reads (`n/a`).
pub(crate) const NA: &str = "n/a";

fn num<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| NA.to_string(), |v| v.to_string())
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| NA.to_string(), |v| format!("{v:.1} ms"))
}

/// `v` as an inline code span, or `n/a`.
pub(crate) fn code_or_na(v: Option<&str>, in_table: bool) -> String {
    v.map_or_else(|| NA.to_string(), |v| inert::code(v, in_table))
}

/// `v` as escaped markdown text, or `n/a`.
pub(crate) fn text_or_na(v: Option<&str>) -> String {
    v.map_or_else(|| NA.to_string(), inert::text)
}

fn yes_no(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "yes",
        Some(false) => "NO",
        None => NA,
    }
}

/// The documented spelling of an outcome (`MAF`).
pub fn outcome_word(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass => "PASS",
        Outcome::Maf => "MAF",
        Outcome::Fail => "FAIL",
        Outcome::Abort => "ABORT",
        Outcome::Hang => "HANG",
        Outcome::Unknown => "UNKNOWN",
    }
}

/// The documented spelling of a fault class (`illegal_memory_access`).
pub(crate) fn class_name(c: FaultClass) -> String {
    serde_json::to_value(c)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn source_words(s: KernelSource) -> &'static str {
    match s {
        KernelSource::FaultLine => "named by the fault report",
        KernelSource::AbortLine => "named by the queue-abort line",
        KernelSource::TraceKernels => "from the last [HRR launch] line",
        KernelSource::GpuErrorLine => "named by hrr-playback's GPU error line",
        KernelSource::LastEvent => "inferred from the last verbose launch",
        KernelSource::SingleKernelArchive => "inferred: the archive holds only this kernel",
        KernelSource::NotFoundLine => "named by hrr-playback's kernel-not-found line",
    }
}

/// `` `kernel` (how) `` or `n/a`.
fn kernel_with_source(f: &Finding, in_table: bool) -> String {
    match (&f.kernel_name, f.kernel_source) {
        (Some(k), Some(s)) => format!(
            "{} ({})",
            inert::code(k, in_table),
            inert::text(source_words(s))
        ),
        (Some(k), None) => inert::code(k, in_table),
        (None, _) => NA.to_string(),
    }
}

/// The fault attribution's sentence, after a space; empty without one.
fn allocation(f: &Finding) -> String {
    f.fault_allocation.as_ref().map_or(String::new(), |a| {
        format!(" {}", inert::text(&a.sentence()))
    })
}

/// The one-line explanation of the outcome (finding F1).
fn explanation(f: &Finding) -> String {
    let kernel = match &f.kernel_name {
        Some(_) => format!(", kernel {}", kernel_with_source(f, false)),
        None => ", no kernel named".to_string(),
    };
    let at = f
        .fault_address
        .as_deref()
        .map_or(String::new(), |a| format!(" at {}", inert::code(a, false)));
    let d2h = format!(
        "D2H {} pass / {} fail of {} attempted",
        num(f.d2h_pass),
        num(f.d2h_fail),
        num(f.d2h_attempted)
    );
    match f.fault_class {
        FaultClass::ReplayPass => format!(
            "the replay completed and matched the capture: {} kernels launched, {d2h}.",
            num(f.kernels_launched)
        ),
        FaultClass::NanInfDivergence if f.outcome == Outcome::Pass => {
            format!("hrr-playback printed PASS, but D2H failures were recorded ({d2h}).")
        }
        FaultClass::NanInfDivergence => format!("replayed outputs differ from the capture ({d2h})."),
        FaultClass::IllegalMemoryAccess => {
            let reason = f
                .fault_reason
                .as_deref()
                .map_or(String::new(), |r| format!(" (reason: {})", inert::text(r)));
            format!("GPU memory access fault{at}{reason}{kernel}.{}", allocation(f))
        }
        FaultClass::ReadOnlyPageFault => {
            format!("GPU write to a read-only page{at}{kernel}.{}", allocation(f))
        }
        FaultClass::ReplayFatalApi => match (&f.failing_api, f.failing_call_index) {
            (Some(api), Some(i)) => format!(
                "{} (event {i}) failed during replay and hrr-playback gave up{kernel}.",
                inert::code(api, false)
            ),
            _ => format!("a replayed call failed and hrr-playback gave up{kernel}."),
        },
        FaultClass::ReplayOom => "the replay host ran out of device memory.".into(),
        FaultClass::ReplayAborted => {
            format!("the replay stopped early without a GPU fault line (see the notes){kernel}.")
        }
        FaultClass::ReplayCrashed => format!(
            "the replay process died on {} without a verdict: the run failed, not the workload; no kernel is implicated.",
            match (&f.replay_exception, f.replay_signal) {
                (Some(code), None) => format!("exception {code}"),
                _ => format!("signal {}", num(f.replay_signal)),
            }
        ),
        FaultClass::Hang => match f.timed_out_after_s {
            Some(s) => format!("the replay made no progress and was stopped after {s} s{kernel}."),
            None => format!("the replay made no progress and hrr-playback's watchdog stopped it{kernel}."),
        },
        FaultClass::VersionMismatch => format!(
            "the archive is format {} and this hrr-playback reads format {}: nothing was replayed.",
            num(f.archive_format_version),
            num(f.reader_format_version)
        ),
        FaultClass::Unknown => "the inputs carry no verdict, fault line or stop marker, so the outcome is unknown; no fault type is inferred.".into(),
        FaultClass::MetadataOnly => "no replay was run; only the archive was examined.".into(),
        FaultClass::PreflightBlocked => "the preflight refused to replay on this host.".into(),
    }
}

fn row(out: &mut String, field: &str, value: &str) {
    let _ = writeln!(out, "| {field} | {value} |");
}

fn item(out: &mut String, field: &str, value: &str) {
    let _ = writeln!(out, "- **{field}**: {value}");
}

/// The chat template, then details.
pub fn markdown(f: &Finding) -> String {
    let mut out = String::new();
    let archive = f
        .archive
        .as_deref()
        .map_or_else(|| NA.to_string(), |a| inert::code(a, false));
    let _ = writeln!(out, "## HRR Triage — {archive}\n");
    let _ = writeln!(
        out,
        "**{}** — {}\n",
        outcome_word(f.outcome),
        summary_words(f)
    );
    if let Some(error) = &f.error {
        let _ = writeln!(out, "**Error** — {}\n", inert::text(error));
    }
    archive_health(&mut out, f);
    replay_result(&mut out, f);
    out.push_str("### Findings\n\n");
    let cause = f.cause.as_ref().map_or(String::new(), |c| {
        format!(
            " Cause named by hrr-playback: {}.",
            inert::code(c.kind.as_str(), false)
        )
    });
    let _ = writeln!(
        out,
        "- **F1** {} — {}{cause}",
        outcome_word(f.outcome),
        explanation(f)
    );
    for (i, l) in f.labels.iter().enumerate() {
        let detail = if l.detail.is_empty() {
            String::new()
        } else {
            format!(" — {}", inert::text(&l.detail))
        };
        let _ = writeln!(out, "- **F{}** {}{detail}", i + 2, l.label);
    }
    out.push_str("\n### Recommended next steps\n\n");
    if f.next_steps.is_empty() {
        out.push_str("None.\n");
    }
    for (i, s) in f.next_steps.iter().enumerate() {
        let _ = writeln!(out, "{}. {}", i + 1, inert::text(s));
    }
    out.push_str("\n### Details\n");
    details(&mut out, f);
    out
}

/// The sentence under the heading; UNKNOWN is said in words.
fn summary_words(f: &Finding) -> String {
    let class = inert::code(&class_name(f.fault_class), false);
    match f.outcome {
        Outcome::Unknown => match f.fault_class {
            FaultClass::Unknown => "the outcome of this replay is unknown: the inputs do not show how it ended, and nothing is inferred.".into(),
            FaultClass::MetadataOnly => "no replay was run, so the outcome is unknown; this finding describes the archive only.".into(),
            FaultClass::PreflightBlocked => "nothing was replayed, so the outcome is unknown: the preflight refused this host.".into(),
            other => format!("the replay outcome is unknown (fault class {}).", inert::code(&class_name(other), false)),
        },
        Outcome::Pass if f.fault_class == FaultClass::ReplayPass => {
            "the replay completed and its output checks passed.".into()
        }
        _ => match &f.kernel_name {
            Some(_) => format!("fault class {class}, kernel {}.", kernel_with_source(f, false)),
            None => format!("fault class {class}, no kernel named."),
        },
    }
}

fn archive_health(out: &mut String, f: &Finding) {
    let h = &f.archive_health;
    out.push_str("### Archive health\n\n| Field | Value |\n|---|---|\n");
    row(out, "Complete", yes_no(h.complete));
    row(
        out,
        "Recovered tail",
        &h.recovered_events
            .map_or_else(|| NA.to_string(), |n| format!("{n} events (0 = clean)")),
    );
    let pids: Vec<String> = h.processes.iter().map(u64::to_string).collect();
    row(
        out,
        "Processes",
        &if pids.is_empty() {
            NA.to_string()
        } else {
            pids.join(", ")
        },
    );
    row(out, "Events", &num(h.events));
    row(out, "Kernel launches", &num(h.kernel_launches));
    row(out, "Blobs", &num(h.blobs));
    row(out, "Code objects", &num(h.code_objects));
    row(out, "Threads", &num(h.threads));
    row(
        out,
        "events.bin modified",
        &text_or_na(h.events_modified.as_deref()),
    );
    out.push('\n');
}

fn replay_result(out: &mut String, f: &Finding) {
    out.push_str("### Replay result\n\n| Field | Value |\n|---|---|\n");
    row(out, "Outcome", outcome_word(f.outcome));
    row(
        out,
        "Fault class",
        &inert::code(&class_name(f.fault_class), true),
    );
    row(out, "Kernel", &kernel_with_source(f, true));
    row(out, "Exit code", &num(f.replay_exit_code));
    row(out, "Signal", &num(f.replay_signal));
    if let Some(code) = &f.replay_exception {
        row(out, "Exception", &exception_words(code));
    }
    row(
        out,
        "Timed out after",
        &f.timed_out_after_s
            .map_or_else(|| NA.to_string(), |s| format!("{s} s")),
    );
    row(out, "Kernels launched", &num(f.kernels_launched));
    let pass = match (f.d2h_pass, f.d2h_within_tol) {
        (Some(p), Some(t)) => format!("{p} ({} exact + {t} within-tol)", p.saturating_sub(t)),
        (p, _) => num(p),
    };
    row(out, "D2H pass", &pass);
    row(out, "D2H fail", &num(f.d2h_fail));
    row(out, "D2H attempted", &num(f.d2h_attempted));
    row(out, "Kernel GPU time", &ms(f.gpu_kernel_ms));
    row(out, "Graph GPU time", &ms(f.gpu_graph_ms));
    row(out, "Total GPU time", &ms(f.gpu_total_ms));
    out.push('\n');
}

/// A Windows exception code with what it means: `0xC0000005 (access
/// violation)`; a code hrr does not know stays as it is.
fn exception_words(code: &str) -> String {
    match crate::replay::exception_meaning(code) {
        Some(meaning) => format!("{code} ({meaning})"),
        None => inert::text(code),
    }
}

fn placement_words(p: Option<&Placement>) -> String {
    match p {
        None => NA.to_string(),
        Some(Placement::Off { off }) => format!("off ({})", inert::text(off)),
        Some(Placement::Active {
            placed, fell_back, ..
        }) => {
            format!("on, {} placed, {fell_back} fell back", num(*placed))
        }
    }
}

/// `pass=N fail=N attempted=N`, unknown counts as `n/a`.
fn d2h_counts(f: &Finding) -> String {
    format!(
        "pass={} fail={} attempted={}",
        num(f.d2h_pass),
        num(f.d2h_fail),
        num(f.d2h_attempted)
    )
}

fn details(out: &mut String, f: &Finding) {
    if f.fault_class == FaultClass::ReplayPass {
        out.push_str("\n#### Replay result\n\n");
        item(out, "Kernels launched", &num(f.kernels_launched));
        item(out, "D2H", &d2h_counts(f));
        item(out, "Placement", &placement_words(f.placement.as_ref()));
    } else {
        out.push_str("\n#### Fault details\n\n");
        if let Some(c) = &f.cause {
            item(
                out,
                "Cause",
                &format!(
                    "{} — {}",
                    inert::code(c.kind.as_str(), false),
                    inert::text(&c.detail)
                ),
            );
        }
        item(
            out,
            "Fault address",
            &code_or_na(f.fault_address.as_deref(), false),
        );
        item(out, "Fault reason", &text_or_na(f.fault_reason.as_deref()));
        item(out, "GPU node", &num(f.gpu_node));
        item(out, "Failing event seq", &num(f.failing_event_seq));
        item(out, "Failing call index", &num(f.failing_call_index));
        item(out, "Failing thread", &num(f.failing_thread));
        item(
            out,
            "Failing API",
            &code_or_na(f.failing_api.as_deref(), false),
        );
        item(
            out,
            "Kernarg address",
            &code_or_na(f.kernarg_address.as_deref(), false),
        );
        item(
            out,
            "Grid / workgroup",
            &format!(
                "{} / {}",
                text_or_na(f.grid.as_deref()),
                text_or_na(f.workgroup.as_deref())
            ),
        );
        item(
            out,
            "Kernel family",
            &code_or_na(f.kernel_family.as_deref(), false),
        );
        out.push_str("\n#### Replay progress at fault\n\n");
        item(out, "Kernels launched", &num(f.kernels_launched));
        item(out, "D2H", &d2h_counts(f));
        item(
            out,
            "Last progress kernel",
            &code_or_na(f.last_progress_kernel.as_deref(), false),
        );
        item(
            out,
            "Last launch before fault",
            &code_or_na(f.last_event_kernel.as_deref(), false),
        );
        item(out, "Placement", &placement_words(f.placement.as_ref()));
    }
    if let Some(r) = &f.replay {
        out.push_str("\n#### Replay run\n\n");
        item(out, "Mode", &text_or_na(r.mode.as_deref()));
        let cmd = (!r.command.is_empty()).then(|| r.command.join(" "));
        item(out, "Command", &code_or_na(cmd.as_deref(), false));
        item(out, "GPU", &num(r.gpu));
        item(out, "Log", &code_or_na(r.log.as_deref(), false));
        item(
            out,
            "Duration",
            &r.duration_s
                .map_or_else(|| NA.to_string(), |d| format!("{d:.1} s")),
        );
        // What the player reported it loaded, one item per label.
        let mut labels: Vec<&str> = Vec::new();
        for l in &r.loaded {
            if !labels.contains(&l.label.as_str()) {
                labels.push(&l.label);
            }
        }
        for label in labels {
            let values: Vec<String> = r
                .loaded
                .iter()
                .filter(|l| l.label == label)
                .map(|l| inert::code(&l.value, false))
                .collect();
            let field = format!("Loaded {}", label.to_ascii_lowercase());
            item(out, &inert::text(&field), &values.join(", "));
        }
    }
    archive_capture(out, f);
    if let Some(p) = &f.preflight {
        preflight(out, p);
    }
    if !f.sources.is_empty() {
        out.push_str("\n#### Sources\n\n");
        for s in &f.sources {
            let _ = writeln!(out, "- {}", inert::code(s, false));
        }
    }
    if !f.notes.is_empty() {
        out.push_str("\n#### Notes\n\n");
        for n in &f.notes {
            let _ = writeln!(out, "- {}", inert::text(n));
        }
    }
}

fn archive_capture(out: &mut String, f: &Finding) {
    let c = &f.capture;
    out.push_str("\n#### Archive / capture\n\n");
    item(
        out,
        "Archive / reader format",
        &format!(
            "{} / {}",
            num(f.archive_format_version),
            num(f.reader_format_version)
        ),
    );
    let torn = match f.archive_health.truncated {
        Some(true) => "yes (a torn trailing record was discarded)",
        Some(false) => "no",
        None => NA,
    };
    item(out, "Torn tail", torn);
    item(out, "Capture HIP", &code_or_na(c.hip_so.as_deref(), false));
    item(
        out,
        "Capture HIP runtime",
        &code_or_na(c.hip_runtime_version.as_deref(), false),
    );
    item(
        out,
        "Capture comgr",
        &code_or_na(c.comgr_version.as_deref(), false),
    );
    item(out, "Capture device count", &num(c.device_count));
    item(
        out,
        "Capture GPU arch",
        &code_or_na(c.gcn_arch.as_deref(), false),
    );
}

/// The preflight report's status and its block/confirm/warning lists.
fn preflight(out: &mut String, p: &Value) {
    out.push_str("\n#### Preflight\n\n");
    item(
        out,
        "Status",
        &text_or_na(p.get("status").and_then(Value::as_str)),
    );
    for (key, title) in [
        ("blocks", "Blocks"),
        ("confirms", "Confirm"),
        ("warnings", "Warnings"),
        ("notes", "Notes"),
    ] {
        let items: Vec<String> = p
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|v| match v {
                        Value::String(s) => inert::text(s),
                        other => inert::text(&other.to_string()),
                    })
                    .collect()
            })
            .unwrap_or_default();
        if !items.is_empty() {
            item(out, title, &items.join("; "));
        }
    }
}
