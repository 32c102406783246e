//! Labels, notes and next steps of a decided finding (DESIGN §6,
//! upstream-triage.md §7.5 and §9). Everything written here is plain text:
//! the renderer escapes it, so no markdown is embedded.

use super::archive_summary::ArchiveFacts;
use super::attribution::{address_value, null_arg_behind};
use super::evidence::{Evidence, Launch, NullArg};
use super::finalize::Reading;
use super::names;
use crate::finding::{
    CauseKind, FaultClass, Finding, KernelSource, Label, Outcome, Placement, ReplayInfo,
};

/// How an inferred kernel name was established and how to confirm it.
pub(crate) fn attribution_note(
    tier: KernelSource,
    name: &str,
    in_flight: Option<&Launch>,
    replay: Option<&ReplayInfo>,
) -> Option<String> {
    match tier {
        KernelSource::TraceKernels => {
            let at = in_flight.map_or(String::new(), |l| format!(" (launch #{}, seq {})", l.ordinal, l.seq));
            let synced = replay.map(|r| r.command.iter().any(|a| a == "--sync-after-launch"));
            Some(if synced == Some(true) {
                format!(
                    "kernel name from the last [HRR launch] line{at}, which had not completed: \
                     under --sync-after-launch that is the launch that failed ({name})."
                )
            } else {
                format!(
                    "kernel name taken from the last [HRR launch] line{at}, the last launch to start \
                     before the replay stopped ({name}); it is the failing launch only if the replay ran \
                     with --sync-after-launch. Confirm with hrr-playback <pid-dir> --sync-after-launch --trace-kernels."
                )
            })
        }
        KernelSource::LastEvent => Some(format!(
            "kernel name taken from the last launch to start before the fault ({name}); the runtime \
             fault line named no kernel. Valid only for a replay run with --verbose, which prints the \
             per-event lines; confirm with --sync-after-launch --trace-kernels."
        )),
        KernelSource::SingleKernelArchive => Some(format!(
            "kernel name inferred from the archive, which contains exactly one kernel ({name}); the \
             replay log carried no per-launch attribution. Re-run the replay with --sync-after-launch \
             --trace-kernels to confirm the faulting dispatch directly."
        )),
        _ => None,
    }
}

fn failed(f: &Finding) -> bool {
    matches!(
        f.outcome,
        Outcome::Maf | Outcome::Fail | Outcome::Abort | Outcome::Hang
    )
}

/// Labels, notes and next steps for a finding whose outcome, class and
/// fields are final.
pub(crate) fn annotate(
    f: &mut Finding,
    e: &Evidence,
    archive: Option<&ArchiveFacts>,
    reading: &Reading<'_>,
) {
    labels(f, e, archive);
    notes(f, e, archive, reading);
    next_steps(f, e);
}

/// `'<kernel>' arg[N] (recorded 0x…)`.
fn null_arg_words(a: &NullArg) -> String {
    format!("'{}' arg[{}] (recorded {})", a.kernel, a.arg, a.address)
}

fn labels(f: &mut Finding, e: &Evidence, archive: Option<&ArchiveFacts>) {
    let h = f.archive_health.clone();
    if h.complete == Some(false) {
        let how = match (h.truncated, h.trailer) {
            (Some(true), _) => "a torn trailing record was discarded",
            (_, Some(true)) => "the trailer's event count does not match the events before it",
            _ => "no clean-shutdown trailer: the capture likely crashed",
        };
        let recovered = h
            .recovered_events
            .map_or(String::new(), |n| format!("; {n} events recovered"));
        f.add_label(Label::CrashTruncated, format!("{how}{recovered}"));
    }
    let fails = f.d2h_fail.unwrap_or(0);
    if fails > 0 || e.d2h_validate_fail.1 > 0 {
        let of = f
            .d2h_attempted
            .map_or(String::new(), |a| format!(" of {a}"));
        let mut detail = format!("{fails}{of} D2H checks failed");
        if let Some(w) = &e.d2h_worst {
            match (w.max_abs, &w.fit) {
                (Some(max), fit) => {
                    let rel = w.max_rel.map_or(String::new(), |r| format!(", maxrel={r}"));
                    let fit = fit.as_ref().map_or(String::new(), |t| format!(" as {t}"));
                    detail.push_str(&format!("; worst max|d|={max}{rel}{fit} at seq {}", w.seq));
                }
                (None, _) => detail.push_str(&format!(
                    "; worst {}/{} bytes differ at seq {}",
                    w.bytes_differ.0, w.bytes_differ.1, w.seq
                )),
            }
        }
        if let Some(why) = &e.d2h_validate_fail.0 {
            detail.push_str(&format!(
                "; {} validation(s) could not run: {why}",
                e.d2h_validate_fail.1
            ));
        }
        f.add_label(Label::D2hFail, detail);
    }
    let untranslated = e.untranslated.unwrap_or(0);
    if e.missing_args > 0 || untranslated > 0 || e.null_args_total > 0 {
        let mut parts = Vec::new();
        if let Some(first) = e.null_args.first() {
            let more = e.null_args_total - 1;
            let more = if more > 0 {
                format!(", and {more} more argument(s)")
            } else {
                String::new()
            };
            parts.push(format!(
                "hrr-playback passed null for {}: the recorded address is in no known allocation{more}",
                null_arg_words(first)
            ));
        }
        if e.missing_args > 0 {
            let ex = e
                .missing_example
                .as_ref()
                .map_or(String::new(), |x| format!(", e.g. {x}"));
            parts.push(format!(
                "{} kernel argument(s) translated to null (MISSING!){ex}",
                e.missing_args
            ));
        }
        if untranslated > 0 {
            parts.push(format!("{untranslated} kernel-arg pointer(s) resolved in no allocation reached the GPU as null"));
        }
        f.add_label(Label::MissingHandle, parts.join("; "));
    }
    stale_pointers(f, e, archive);
    if !e.noop_apis.is_empty() || e.graph_construction_unsupported {
        let mut apis: Vec<String> = e.noop_apis.iter().cloned().collect();
        if e.graph_construction_unsupported {
            apis.push("explicit (node-API) graph construction".into());
        }
        f.add_label(Label::NoopApi, format!("not replayed: {}", apis.join(", ")));
    }
    match &f.placement {
        Some(Placement::Active { fell_back, .. }) if *fell_back > 0 => {
            let detail =
                format!("{fell_back} allocation(s) did not land at their recorded address");
            f.add_label(Label::PlacementFallback, detail);
        }
        Some(Placement::Off { off }) if failed(f) => {
            let detail = format!("placement was off ({off})");
            f.add_label(Label::PlacementFallback, detail);
        }
        _ => {}
    }
    let mut pids: Vec<u64> = archive
        .map(ArchiveFacts::other_processes)
        .unwrap_or_default();
    if pids.is_empty() && e.info.root_processes.len() > 1 {
        pids = e.info.root_processes.iter().map(|p| p.0).collect();
    }
    if pids.len() > 1 {
        let list: Vec<String> = pids.iter().map(u64::to_string).collect();
        f.add_label(
            Label::MultiProcess,
            format!(
                "the capture root holds processes {}; triage each",
                list.join(", ")
            ),
        );
    }
    if f.fault_class == FaultClass::ReplayPass && e.region_oob == 0 {
        f.add_label(Label::Clean, "the replay passed with nothing to qualify it");
    }
}

/// Stale pointer examples shown in the label.
const STALE_SHOWN: usize = 3;

/// STALE-POINTER from the capture-time audit of the archive summary, and,
/// beside the player's null arguments (the replay-side evidence), whether
/// the two name the same pointers.
fn stale_pointers(f: &mut Finding, e: &Evidence, archive: Option<&ArchiveFacts>) {
    let Some(m) = archive
        .and_then(|a| a.memory.as_ref())
        .filter(|m| m.stale_pointer_launches > 0)
    else {
        return;
    };
    let stale: Vec<_> = m
        .examples
        .iter()
        .filter(|x| x.kind == "stale_pointer")
        .collect();
    let shown: Vec<String> = stale
        .iter()
        .take(STALE_SHOWN)
        .map(|x| {
            let freed = x.range.as_ref().map_or(String::new(), |r| {
                format!(
                    ", freed by {} at seq {}",
                    r.freed_by.as_deref().unwrap_or("n/a"),
                    r.free_seq.map_or("n/a".into(), |q| q.to_string())
                )
            });
            format!(
                "launch seq {} {} arg {} = {}{freed}",
                x.launch_seq, x.kernel, x.argument, x.address
            )
        })
        .collect();
    f.add_label(
        Label::StalePointer,
        format!(
            "{} launch(es) pass a pointer into memory freed earlier and not reallocated (capture-time audit): {}",
            m.stale_pointer_launches,
            shown.join("; ")
        ),
    );
    if e.null_args.is_empty() {
        return;
    }
    let same: Vec<&NullArg> = e
        .null_args
        .iter()
        .filter(|n| {
            stale.iter().any(|x| {
                address_value(&x.address).is_some()
                    && address_value(&x.address) == address_value(&n.address)
            })
        })
        .collect();
    f.add_note(match same.first() {
        Some(n) => format!(
            "the capture-time pointer audit and the replay agree: hrr-playback passed null for {}, a pointer the audit found in memory freed before that launch.",
            null_arg_words(n)
        ),
        None => format!(
            "the capture-time pointer audit and the replay differ: hrr-playback passed null for {}, which is not among the stale pointers the audit shows ({}).",
            null_arg_words(&e.null_args[0]),
            stale.iter().map(|x| x.address.as_str()).collect::<Vec<_>>().join(", ")
        ),
    });
}

/// What the cause-bearing line means, after `cause (<kind>): `.
fn cause_words(kind: CauseKind) -> &'static str {
    match kind {
        CauseKind::GraphIncomplete => "a graph node this replay cannot rebuild, so its graph is incomplete",
        CauseKind::DeviceCount => "the recording used a device this replay does not have",
        CauseKind::ArchiveIncomplete => "a code object or blob the replay could not find in the archive or could not load",
        CauseKind::GuardFault => "a kernel ran past the end of a guarded block (an out-of-bounds access the replay's guard caught)",
        CauseKind::RegionOob => "the region check found an intra-segment out-of-bounds access",
        CauseKind::FileCap => "hrr-playback refused a file larger than its cap",
    }
}

/// Notes on the launch lines and the failing call (reference §10.2, §10.4).
fn attribution_notes(
    f: &mut Finding,
    e: &Evidence,
    archive: Option<&ArchiveFacts>,
    reading: &Reading<'_>,
) {
    let last = e.last_launch.as_ref().map(|l| {
        let name = names::resolve(&l.name, archive).name().map_or_else(
            || "a kernel whose shortened name was not expanded".into(),
            str::to_string,
        );
        (name, l.ordinal)
    });
    if let (Some(k), Some(KernelSource::NotFoundLine)) = (reading.not_found, f.kernel_source) {
        let before = match &last {
            Some((name, n)) => format!(
                "; hrr-playback prints this line before a launch's [HRR launch] line and prints none for it, so the last [HRR launch] line ({name}, launch #{n}) is the launch before, not the one that failed"
            ),
            None => String::new(),
        };
        f.add_note(format!(
            "hrr-playback found kernel {k} in no loaded module, so that launch never ran{before}."
        ));
    }
    let failed_call = matches!(
        f.fault_class,
        FaultClass::ReplayFatalApi
            | FaultClass::IllegalMemoryAccess
            | FaultClass::ReadOnlyPageFault
            | FaultClass::ReplayAborted
    );
    if let (true, true, Some(api)) = (reading.non_launch, failed_call, reading.failing_api) {
        let mut note = format!("the failing call, {api}, launches no kernel");
        match (&last, reading.synced) {
            (Some((name, n)), Some(true)) => note.push_str(&format!(
                "; under --sync-after-launch the launch of the last [HRR launch] line ({name}, launch #{n}) had completed before it"
            )),
            (Some((name, n)), _) if f.outcome == Outcome::Maf => note.push_str(&format!(
                "; the last [HRR launch] line announced {name} (launch #{n}), and without a sync after each launch an earlier kernel's fault can surface at a later call, so that launch is a candidate, not an established cause"
            )),
            (Some((name, n)), _) => note.push_str(&format!(
                "; the last [HRR launch] line ({name}, launch #{n}) announced an earlier launch"
            )),
            (None, _) => {}
        }
        if f.kernel_name.is_none() {
            note.push_str(", so no kernel is named from the launch lines");
        }
        note.push('.');
        f.add_note(note);
    }
}

fn notes(f: &mut Finding, e: &Evidence, archive: Option<&ArchiveFacts>, reading: &Reading<'_>) {
    attribution_notes(f, e, archive, reading);
    if let Some(c) = &f.cause {
        let oob = if c.kind == CauseKind::RegionOob && e.region_oob > 1 {
            format!(" ({} region OOB lines)", e.region_oob)
        } else {
            String::new()
        };
        f.add_note(format!(
            "cause ({}): {}; hrr-playback printed: {}{oob}",
            c.kind.as_str(),
            cause_words(c.kind),
            c.detail
        ));
    } else if e.region_oob > 0 && f.outcome == Outcome::Pass {
        f.add_note(format!(
            "hrr-playback's region check reported {} intra-segment out-of-bounds access(es) (region OOB) that the replay's contiguous segments absorbed; the verdict counts them only under --regions-strict.",
            e.region_oob
        ));
    }
    if !e.loaded.is_empty() && f.replay.is_none() {
        let mut parts: Vec<String> = Vec::new();
        for label in ["Device", "Runtime"] {
            let values: Vec<&str> = e
                .loaded
                .iter()
                .filter(|(l, _)| l == label)
                .map(|(_, v)| v.as_str())
                .collect();
            if !values.is_empty() {
                parts.push(format!("{label}: {}", values.join(", ")));
            }
        }
        f.add_note(format!(
            "hrr-playback reported what it loaded — {}.",
            parts.join("; ")
        ));
    }
    if let Some(q) = &e.queue_oom {
        if let Some(mb) = q.free_mb {
            f.add_note(format!(
                "the runtime reported {mb} MB of device memory free when it aborted the queue for lack of resources (Available Free mem)."
            ));
        }
    }
    if let Some(arg) = null_arg_behind(f, e) {
        f.add_note(format!(
            "the fault is at address {}, in the null page; earlier, hrr-playback passed null for {} because its recorded value is in no known allocation (\"passing null so it faults at first use\").",
            f.fault_address.as_deref().unwrap_or_default(),
            null_arg_words(arg)
        ));
    }
    if let Some(p) = archive.and_then(|a| a.problem("bytes_after_trailer")) {
        f.add_note(format!("archive: {}", p.detail));
    }
    if let Some((file, reader, path)) = &e.version_mismatch {
        let at = path.as_ref().map_or(String::new(), |p| format!(" ({p})"));
        f.add_note(format!("archive wire version {file} does not match hrr-playback reader {reader}{at}; nothing was replayed."));
    }
    if let Some(w) = &e.watchdog {
        f.add_note(format!(
            "hrr-playback's sync watchdog ({} ms) fired at: {}",
            w.ms, w.at
        ));
    }
    if let Some(s) = e.wall_limit_s {
        f.add_note(format!(
            "hrr-playback ended the replay after {s} s (--max-wall-seconds)."
        ));
    }
    if f.fault_class == FaultClass::Hang
        && e.watchdog.is_none()
        && e.wall_limit_s.is_none()
        && e.timeout_marker.is_none()
        && f.replay.as_ref().is_some_and(|r| !r.timed_out)
    {
        f.add_note("hrr-playback exited with 124: its sync watchdog or --max-wall-seconds ended the replay.");
    }
    if f.outcome == Outcome::Hang {
        match &e.progress {
            Some(p) => f.add_note(format!(
                "the last progress line reported launch #{} (seq {}, {}) complete at {:.1} s.",
                p.kernels,
                p.seq,
                f.last_progress_kernel
                    .as_deref()
                    .unwrap_or("a kernel whose shortened name was not expanded"),
                p.elapsed_s
            )),
            None => f.add_note("no progress line was printed: the replay stopped before its first launch completed, or progress lines were off (replay.progress_seconds)."),
        }
    }
    if f.outcome != Outcome::Pass {
        for q in &e.queue_statuses {
            let code = q
                .hex
                .as_ref()
                .map_or(String::new(), |h| format!(" (code {h})"));
            f.add_note(if q.abort {
                format!("the queue aborted with HSA_STATUS_ERROR_{}{code}.", q.code)
            } else {
                format!(
                    "the runtime reported queue error HSA_STATUS_ERROR_{}{code}.",
                    q.code
                )
            });
        }
    }
    if e.memory_fault.as_ref().is_some_and(|m| m.inexact) {
        f.add_note(
            "the runtime marked the fault address as possibly inexact (may not be exact address).",
        );
    }
    if let Some(c) = &e.fatal_call {
        if f.outcome == Outcome::Maf
            && e.gpu_error.is_none()
            && e.fatal_gpu.is_none()
            && e.memory_fault.is_none()
        {
            f.add_note(format!(
                "the illegal memory access surfaced as the return code of event {} ({}); without a sync after each launch a later call reports an earlier kernel's fault.",
                c.index, c.api
            ));
        }
    }
    if let Some((k, what)) = &e.launch_error {
        if f.kernel_source != Some(KernelSource::NotFoundLine) {
            f.add_note(format!("kernel {k}: {what}."));
        }
    }
    if f.fault_class == FaultClass::ReplayFatalApi {
        if let Some(t) = &e.fatal_text {
            f.add_note(format!("hrr-playback: {t}"));
        }
        if let (0, Some(n)) = (e.continued_errors.1, e.events_failed) {
            f.add_note(format!(
                "{n} event(s) failed and the replay continued past each (--continue-on-error)."
            ));
        }
    }
    if let (FaultClass::ReplayOom, Some(line)) = (f.fault_class, &e.oom) {
        f.add_note(format!("out of memory: {line}"));
    }
    if let Some(s) = &e.setup_error {
        f.add_note(format!("hrr-playback could not start the replay: {s}"));
    }
    if let Some(d) = &e.divergence {
        let at = d.seq.map_or(String::new(), |s| format!(" at seq {s}"));
        let pct = d
            .percent
            .as_ref()
            .map_or(String::new(), |(p, t)| format!(" ({p}% >= {t}% threshold)"));
        f.add_note(format!(
            "hrr-playback stopped the replay{at}: {}/{} D2H validations failed{pct}. This guard (HIP_HRR_REPLAY_DIVERGENCE_ABORT) reports a replay-fidelity divergence, e.g. nondeterministic reductions.",
            d.failed, d.attempted
        ));
    }
    if let Some(n) = e.d2h_all_skipped {
        f.add_note(format!("{n} D2H validation event(s) were attempted but none recorded pass or fail (all skipped): check pointer translation and blob files."));
    }
    if f.fault_class == FaultClass::ReplayCrashed {
        let sig = match (f.replay_signal, &f.replay_exception) {
            (Some(s), _) => format!("signal {s}"),
            (None, Some(code)) => format!("Windows exception {code}"),
            (None, None) => "a signal".to_string(),
        };
        f.add_note(format!(
            "the replay process was killed by {sig} without printing a verdict, so no kernel is implicated and the workload is untested. Re-run the replay; if it dies the same way again, this is a defect in hrr-playback or its environment rather than in the captured workload."
        ));
    }
    let aten = f
        .kernel_name
        .as_deref()
        .is_some_and(|k| k.contains("_ZN2at6native") || k.contains("at::native::"));
    if aten
        && matches!(
            f.fault_class,
            FaultClass::IllegalMemoryAccess
                | FaultClass::ReadOnlyPageFault
                | FaultClass::ReplayAborted
        )
    {
        f.add_note("ATen kernels are launched with <<<>>> (hipLaunchKernel / hipLaunchByPtr): pointers inside by-value struct arguments are translated by a value-based heuristic, and older archives recorded none of them, so a fault here can be a replay artefact. Confirm against the user's original failure signature before reporting this as their bug.");
    }
    if failed(f) {
        if let Some(note) = fidelity_note(f.placement.as_ref()) {
            f.add_note(note);
        }
    }
    if let Some((claimed, before)) = e.reader.trailer_mismatch {
        f.add_note(format!("the clean-shutdown trailer counts {claimed} events but {before} precede it; the archive is not treated as complete."));
    }
    if let Some(n) = e.reader.records_after_trailer {
        f.add_note(format!(
            "{n} record(s) follow the clean-shutdown trailer and were ignored by the reader."
        ));
    }
    if f.outcome == Outcome::Maf && f.kernel_name.is_none() && !reading.non_launch {
        let n = f
            .archive_health
            .kernel_launches
            .map_or("an unknown number of".into(), |n| n.to_string());
        f.add_note(format!("no kernel is named: the fault lines carried none and the archive holds {n} kernel launch(es), so none is inferred."));
    }
    if f.fault_class == FaultClass::Unknown {
        if let Some(code) = f.replay_exit_code.filter(|c| *c != 0) {
            f.add_note(format!(
                "the replay exited with code {code} without a verdict, fault line or stop marker."
            ));
        }
    }
    if f.fault_class == FaultClass::MetadataOnly {
        f.add_note("no replay was run: this finding describes the archive only.");
    }
    if e.long_lines > 0 {
        f.add_note(format!(
            "{} input line(s) longer than 64 KiB were examined by their first 64 KiB only.",
            e.long_lines
        ));
    }
}

/// The one `replay fidelity:` note of a failed replay whose allocations moved.
fn fidelity_note(p: Option<&Placement>) -> Option<String> {
    match p? {
        Placement::Off { off } => Some(format!(
            "replay fidelity: placement was off ({off}), so every device address stored in device memory is stale in this replay; confirm against the user's original failure signature before treating the fault as theirs."
        )),
        Placement::Active { fell_back, named, .. } if *fell_back > 0 => {
            let shown: Vec<&str> = named.iter().take(4).map(String::as_str).collect();
            let list = if shown.is_empty() { String::new() } else { format!(" ({})", shown.join("; ")) };
            Some(format!(
                "replay fidelity: {fell_back} allocation(s) did not land at their recorded address{list}, so copies of those addresses stored in device memory are stale; the class stays what the evidence says, but confirm against the user's original failure signature."
            ))
        }
        Placement::Active { .. } => None,
    }
}

/// The next step a cause calls for, before the class's own.
fn cause_steps(f: &mut Finding, e: &Evidence) {
    let Some(kind) = f.cause.as_ref().map(|c| c.kind) else {
        return;
    };
    let archive = f.archive.clone().unwrap_or_else(|| "<archive>".into());
    match kind {
        CauseKind::DeviceCount => {
            let devices = e.cause.as_ref().and_then(|c| c.devices);
            f.add_next_step(match devices {
                Some((device, had)) => format!(
                    "Replay with at least {} device(s) visible: the recording allocated on device {device} and this replay had {had}. hrr replay exposes the one GPU it selects (HIP_VISIBLE_DEVICES), so run hrr-playback with HIP_VISIBLE_DEVICES listing that many devices, on a host that has them.",
                    device.max(0) + 1
                ),
                None => "Replay with as many devices visible as the recording used (HIP_VISIBLE_DEVICES).".into(),
            });
        }
        CauseKind::ArchiveIncomplete => f.add_next_step(format!(
            "Check the archive's blobs and code objects with hrr archive info {archive}: it lists those its events reference that have no file (missing blobs, missing code objects)."
        )),
        CauseKind::FileCap => f.add_next_step(
            "Raise hrr-playback's file cap past the refused file's size: add --max-file-bytes <bytes> to replay.extra_args (the player's default is 4 GiB) and replay again.",
        ),
        CauseKind::GraphIncomplete => {
            let detail = f.cause.as_ref().map_or("", |c| c.detail.as_str());
            let node = detail
                .split_once(": not reconstructable")
                .map_or("a graph node".to_string(), |(api, _)| format!("the node {api} added"));
            f.add_next_step(format!(
                "This hrr-playback cannot rebuild {node} (NOOP-API), so the graph cannot run: replay with a player that reconstructs it, or reproduce the failure without HIP graphs."
            ));
        }
        CauseKind::GuardFault | CauseKind::RegionOob => {}
    }
}

fn next_steps(f: &mut Finding, e: &Evidence) {
    let kernel = f.kernel_name.clone();
    let inferred = matches!(
        f.kernel_source,
        Some(KernelSource::SingleKernelArchive | KernelSource::LastEvent) | None
    ) || (f.kernel_source == Some(KernelSource::TraceKernels)
        && !f
            .replay
            .as_ref()
            .is_some_and(|r| r.command.iter().any(|a| a == "--sync-after-launch")));
    let aten = f.notes.iter().any(|n| n.starts_with("ATen kernels"));
    cause_steps(f, e);
    match f.fault_class {
        FaultClass::ReplayPass | FaultClass::NanInfDivergence if f.outcome == Outcome::Pass => {
            if f.fault_class == FaultClass::ReplayPass {
                f.add_next_step("Nothing to reproduce: the replay matched the capture. If the user saw a failure, it is not in this capture or depends on something replay does not reproduce (see the labels).");
            } else {
                f.add_next_step("The player reported PASS while D2H failures were recorded: inspect the D2H FAIL lines of the log before trusting the PASS.");
            }
            if f.d2h_attempted == Some(0) {
                f.add_next_step("The archive carries no D2H validation blobs: re-capture with output validation to check results, not just completion.");
            }
        }
        FaultClass::IllegalMemoryAccess | FaultClass::ReadOnlyPageFault => {
            if aten {
                f.add_next_step("Ask the user for the original failure signature (kernel, address, error) before calling this their bug.");
            }
            if inferred {
                f.add_next_step("Re-run the replay with --sync-after-launch --trace-kernels to attribute the fault to its launch directly.");
            }
            let first = if inferred {
                "Once the launch is confirmed, check"
            } else {
                "Check"
            };
            match (&kernel, &f.fault_address) {
                (Some(k), Some(a)) => f.add_next_step(format!(
                    "{first} kernel {k} for an out-of-bounds or stale-pointer access at {a} (its arguments, grid and allocation sizes)."
                )),
                (Some(k), None) => f.add_next_step(format!("{first} kernel {k} for an out-of-bounds or stale-pointer access.")),
                _ => {}
            }
        }
        FaultClass::ReplayCrashed => {
            f.add_next_step("Re-run the replay; if it dies the same way again, suspect hrr-playback or its environment (library path, ROCm install), not the captured workload.");
        }
        FaultClass::VersionMismatch => {
            let (a, r) = (f.archive_format_version, f.reader_format_version);
            let fmt = |v: Option<u32>| v.map_or("n/a".to_string(), |v| v.to_string());
            f.add_next_step(format!(
                "Replay with an hrr-playback that reads archive format {} (this one reads {}), or re-capture with the runtime that matches this player.",
                fmt(a), fmt(r)
            ));
        }
        FaultClass::Hang => {
            f.add_next_step("Raise the replay timeout once (--timeout) to rule out a slow replay.");
            let last = f
                .kernel_name
                .clone()
                .or_else(|| f.last_progress_kernel.clone());
            f.add_next_step(match last {
                Some(k) => format!("If it hangs again, look at {k} and the launches right after it; attach rocgdb to inspect the waves."),
                None => "If it hangs again, re-run with --trace-kernels so the last launch is named.".to_string(),
            });
        }
        FaultClass::ReplayOom => {
            f.add_next_step("Replay on a GPU with more free memory (--gpu), or free the device first; the capture's allocations did not fit.");
        }
        FaultClass::ReplayFatalApi => {
            if let (Some(KernelSource::NotFoundLine), Some(k)) = (f.kernel_source, &kernel) {
                let archive = f.archive.clone().unwrap_or_else(|| "<archive>".into());
                f.add_next_step(format!(
                    "Find the code object that defines {k}: hrr archive info {archive} lists the code objects the archive references but lacks; if none is missing, check that the code object holding it loaded on this GPU (the log's code-object lines)."
                ));
            }
            let api = f
                .failing_api
                .clone()
                .unwrap_or_else(|| "the failing call".into());
            f.add_next_step(format!("Look at {api} in the archive (hrr archive events) and compare the replay host's ROCm stack with the capture's (hrr preflight)."));
        }
        FaultClass::ReplayAborted => {
            if aten {
                f.add_next_step("Ask the user for the original failure signature before calling this their bug.");
            }
            if e.setup_error.is_some() {
                f.add_next_step(
                    "Fix what kept hrr-playback from starting (see the notes) and replay again.",
                );
            } else {
                f.add_next_step("Re-run the replay with --sync-after-launch --trace-kernels to name the dispatch the queue aborted on.");
            }
        }
        FaultClass::NanInfDivergence => {
            f.add_next_step("Re-run the replay: a nondeterministic divergence moves from run to run, a real defect fails the same D2H checks again.");
            f.add_next_step(
                "Compare the failing copies (D2H-FAIL label) with the user's expected outputs.",
            );
        }
        FaultClass::MetadataOnly => {
            let archive = f.archive.clone().unwrap_or_else(|| "<archive>".into());
            f.add_next_step(format!(
                "Replay it on a host with an AMD GPU and hrr-playback: hrr triage {archive} (or in the capture's docker image: hrr triage --replay docker --image IMG {archive})."
            ));
        }
        FaultClass::PreflightBlocked => {
            f.add_next_step(
                "Resolve the preflight blocks, or replay on a host that matches the capture.",
            );
        }
        FaultClass::Unknown | FaultClass::ReplayPass => {
            f.add_next_step("Check that the log is the complete replay output; then re-run the replay (hrr replay <archive>) and classify the new log.");
        }
    }
    if f.has_label(Label::CrashTruncated) && failed(f) {
        f.add_next_step("Keep the archive as it is: replay reads truncated archives, and hrr-playback --repair would erase the crash evidence.");
    }
}
