//! From evidence to a finding: the upstream precedence (upstream-triage.md
//! §7.3/§7.4, extended to the real shapes of playback-output.md §5), the
//! DESIGN §6 rules, and the kernel attribution fallback order.

use super::advice;
use super::archive_summary::ArchiveFacts;
use super::evidence::{Evidence, Launch};
use super::names::{self, Resolved};
use super::preflight_view::PreflightView;
use super::InputRecord;
use crate::finding::{
    ArchiveHealth, FaultClass, Finding, KernelSource, LoadedLine, Outcome, Placement, ReplayInfo,
};
use serde_json::Value;

/// Exit code of the player's sync watchdog and `--max-wall-seconds` paths.
const WATCHDOG_EXIT: i32 = 124;

/// HSA queue statuses that are memory faults (the rest abort the queue otherwise).
const MEMORY_STATUSES: [&str; 2] = ["MEMORY_FAULT", "MEMORY_APERTURE_VIOLATION"];

/// What was read, and whether the caller chose not to replay.
pub(crate) struct Inputs<'a> {
    /// Every input, in the order read.
    pub inputs: &'a [InputRecord],
    /// The caller ran no replay on purpose (metadata-only triage).
    pub replay_skipped: bool,
}

/// Whether `api` launches a kernel: the names of the launch event types
/// (hipLaunchKernel, hipModuleLaunchKernel, hipExtModuleLaunchKernel,
/// hipLaunchByPtr, the cooperative, `_spt` and `Ex` variants). Graph
/// launches and host-function launches are not kernel launches here: no
/// `[HRR launch]` line announces them.
pub(crate) fn is_launch_api(api: &str) -> bool {
    api == "hipLaunchByPtr" || (api.contains("Launch") && api.contains("Kernel"))
}

/// How the log's launch lines relate to the failure.
pub(crate) struct Reading<'a> {
    /// The last announced launch that no later line showed complete, when
    /// the evidence makes it the failing one: not when the failing call
    /// launches no kernel, nor when a `Kernel '…' not found` line came after
    /// it (the launch that failed then never got a line of its own).
    pub failing_launch: Option<&'a Launch>,
    /// The API of the failing call, when a fatal line names one.
    pub failing_api: Option<&'a str>,
    /// The failing call is no kernel launch: no kernel is named from the
    /// order of the log's launch lines.
    pub non_launch: bool,
    /// A `Kernel '…' not found` line followed the last launch line.
    pub not_found: Option<&'a str>,
    /// The replay ran with `--sync-after-launch`: `Some(true)` from its
    /// command or its log, `Some(false)` from a command without it.
    pub synced: Option<bool>,
}

impl<'a> Reading<'a> {
    pub(crate) fn new(e: &'a Evidence, replay: Option<&ReplayInfo>) -> Reading<'a> {
        let failing_api = e
            .fatal_call
            .as_ref()
            .or(e.fatal_gpu.as_ref())
            .map(|c| c.api.as_str())
            .or(e.sync_error.as_ref().map(|s| s.api.as_str()))
            .filter(|a| !a.is_empty());
        let non_launch = failing_api.is_some_and(|a| !is_launch_api(a));
        let not_found = e
            .not_found
            .as_ref()
            .filter(|(_, before)| *before == e.launch_lines)
            .map(|(k, _)| k.as_str());
        let synced = match replay.filter(|r| !r.command.is_empty()) {
            Some(r) => Some(r.command.iter().any(|a| a == "--sync-after-launch")),
            None => e.launch_sync_seen.then_some(true),
        };
        let in_flight = e.last_launch.as_ref().filter(|l| !l.completed);
        let failing_launch = in_flight.filter(|_| !non_launch && not_found.is_none());
        Reading {
            failing_launch,
            failing_api,
            non_launch,
            not_found,
            synced,
        }
    }
}

/// Printed kernel names resolved once each, with the notes that say how a
/// compacted one was read.
pub(crate) struct NameBook<'a> {
    archive: Option<&'a ArchiveFacts>,
    seen: Vec<Resolved>,
}

impl<'a> NameBook<'a> {
    fn new(archive: Option<&'a ArchiveFacts>) -> NameBook<'a> {
        NameBook {
            archive,
            seen: Vec::new(),
        }
    }

    /// The name `printed` stands for, if any; a compacted one is expanded
    /// through the archive's kernel table or yields none.
    pub(crate) fn name(&mut self, printed: &str) -> Option<String> {
        let r = names::resolve(printed, self.archive);
        let name = r.name().map(str::to_string);
        if !matches!(r, Resolved::Full(_)) && !self.seen.contains(&r) {
            self.seen.push(r);
        }
        name
    }

    /// The notes of the compacted names that were read.
    fn notes(&self) -> Vec<String> {
        self.seen.iter().filter_map(Resolved::note).collect()
    }
}

pub(crate) fn finalize(
    e: &Evidence,
    how: &Inputs<'_>,
    archive: Option<&ArchiveFacts>,
    replay: Option<&ReplayInfo>,
    preflight: Option<&Value>,
) -> Finding {
    let name = archive
        .and_then(|a| a.path.clone())
        .or_else(|| e.info.path.clone());
    let mut f = Finding::new(name);
    let mut book = NameBook::new(archive);
    let reading = Reading::new(e, replay);
    let view = preflight.map(PreflightView::of);
    fill_archive(&mut f, e, archive, view.as_ref());
    fill_replay(&mut f, e, replay, &mut book);
    f.preflight = preflight.cloned();
    f.replay = replay.cloned().map(|mut r| {
        r.stopped_by = crate::replay::StoppedBy::from_evidence(
            e.timeout_marker.is_some() || r.timed_out,
            e.watchdog.is_some(),
            e.wall_limit_s.is_some(),
        );
        r
    });
    fill_loaded(&mut f, e);
    f.sources = sources(how.inputs, archive);
    (f.outcome, f.fault_class) = decide(e, how, replay, view.as_ref());
    f.cause = e
        .cause
        .as_ref()
        .filter(|_| cause_applies(&f))
        .map(|c| c.cause.clone());
    fault_details(&mut f, e, &reading);
    attribute_kernel(&mut f, e, archive, replay, &reading, &mut book);
    super::attribution::attribute(&mut f, e, archive);
    if f.outcome == Outcome::Pass {
        // A PASS never names a kernel, failing event or failing API.
        f.kernel_name = None;
        f.kernel_source = None;
        f.failing_event_seq = None;
        f.failing_call_index = None;
        f.failing_thread = None;
        f.failing_api = None;
        if f.fault_class == FaultClass::ReplayPass {
            f.last_event_kernel = None;
            f.last_progress_kernel = None;
        }
    }
    if f.fault_class == FaultClass::ReplayCrashed {
        // A run that died on a signal implicates no kernel (no tier names one;
        // this keeps the rule explicit).
        f.kernel_name = None;
        f.kernel_source = None;
    }
    f.kernel_family = f.kernel_name.as_deref().map(kernel_family);
    // A clean PASS reports no kernel names, so how they were read is moot.
    if f.fault_class != FaultClass::ReplayPass {
        for note in book.notes() {
            f.add_note(note);
        }
    }
    advice::annotate(&mut f, e, archive, &reading);
    f
}

/// A cause names why a replay failed, so it is kept for a failed (or
/// undecided) replay, not for a PASS, a hang, a crash without a fault line,
/// or a replay that never ran.
fn cause_applies(f: &Finding) -> bool {
    matches!(
        f.outcome,
        Outcome::Maf | Outcome::Fail | Outcome::Abort | Outcome::Unknown
    ) && !matches!(
        f.fault_class,
        FaultClass::ReplayCrashed
            | FaultClass::VersionMismatch
            | FaultClass::MetadataOnly
            | FaultClass::PreflightBlocked
    )
}

/// The player's `Device` and `Runtime` lines go in the replay record when
/// there is one (advice notes them otherwise).
fn fill_loaded(f: &mut Finding, e: &Evidence) {
    if let Some(r) = f.replay.as_mut().filter(|r| r.loaded.is_empty()) {
        r.loaded = e
            .loaded
            .iter()
            .map(|(label, value)| LoadedLine {
                label: label.clone(),
                value: value.clone(),
            })
            .collect();
    }
}

fn fill_archive(
    f: &mut Finding,
    e: &Evidence,
    archive: Option<&ArchiveFacts>,
    pf: Option<&PreflightView>,
) {
    let mut h = archive.map(ArchiveFacts::health).unwrap_or_default();
    let info = &e.info;
    let rd = &e.reader;
    let complete = info
        .complete
        .or(rd.trailer_mismatch.map(|_| false))
        .or(rd.no_trailer_recovered.map(|_| false));
    let from_logs = ArchiveHealth {
        complete,
        trailer: match (info.complete, rd.trailer_mismatch, rd.no_trailer_recovered) {
            (Some(true), ..) | (_, Some(_), _) => Some(true),
            (_, _, Some(_)) => Some(false),
            (Some(false), ..) if !info.torn => Some(false),
            _ => None,
        },
        truncated: if info.torn || rd.torn {
            Some(true)
        } else {
            complete.map(|_| false)
        },
        recovered_events: match complete {
            Some(true) => Some(0),
            Some(false) => rd.no_trailer_recovered.or(info.recovered).or(info.events),
            None => None,
        },
        events: info
            .events
            .or(info.recovered)
            .or(rd.header.map(|h| h[0]))
            .or(rd.no_trailer_recovered),
        kernel_launches: info
            .kernels
            .or(info.breakdown_launches)
            .or(rd.header.map(|h| h[1])),
        blobs: info.blobs.or(rd.header.map(|h| h[2])),
        code_objects: info.code_objects.or(rd.header.map(|h| h[3])),
        threads: info.threads.or(rd.threads),
        processes: info.root_processes.iter().map(|p| p.0).collect(),
        events_modified: None,
    };
    h.complete = h.complete.or(from_logs.complete);
    h.trailer = h.trailer.or(from_logs.trailer);
    h.truncated = h.truncated.or(from_logs.truncated);
    h.recovered_events = h.recovered_events.or(from_logs.recovered_events);
    h.events = h.events.or(from_logs.events);
    h.kernel_launches = h.kernel_launches.or(from_logs.kernel_launches);
    h.blobs = h.blobs.or(from_logs.blobs);
    h.code_objects = h.code_objects.or(from_logs.code_objects);
    h.threads = h.threads.or(from_logs.threads);
    if h.processes.is_empty() {
        h.processes = from_logs.processes;
    }
    f.archive_health = h;

    let mismatch = e.version_mismatch.as_ref();
    f.archive_format_version = archive
        .and_then(|a| a.format_version)
        .or(mismatch.map(|m| m.0));
    f.reader_format_version = mismatch.map(|m| m.1).or(e.reader_version);

    let mut c = archive.map(ArchiveFacts::capture).unwrap_or_default();
    c.hip_so = e.capture_hip_so.clone();
    if let Some(pc) = pf.and_then(|p| p.capture.as_ref()) {
        c.hip_runtime_version = c
            .hip_runtime_version
            .or_else(|| pc.hip_runtime_version.clone());
        c.comgr_version = c.comgr_version.or_else(|| pc.comgr_version.clone());
        c.device_count = c.device_count.or(pc.device_count);
        c.gcn_arch = c
            .gcn_arch
            .or_else(|| pf.and_then(PreflightView::first_arch).map(str::to_string));
    }
    f.capture = c;
}

fn fill_replay(f: &mut Finding, e: &Evidence, replay: Option<&ReplayInfo>, book: &mut NameBook) {
    f.replay_exit_code = replay.and_then(|r| r.exit_code);
    f.replay_signal = e.signal_marker.or(replay.and_then(|r| r.signal));
    f.replay_exception = e
        .exception_marker
        .clone()
        .or_else(|| replay.and_then(|r| r.exception.clone()));
    f.timed_out_after_s = e.timeout_marker.or(e.wall_limit_s).or_else(|| {
        replay
            .filter(|r| r.timed_out)
            .and_then(|r| r.duration_s)
            .map(|d| d.round().max(0.0) as u64)
    });
    let progress = e.progress.as_ref();
    f.kernels_launched = e.kernels_launched.or(progress.map(|p| p.kernels));
    if let Some(s) = e.d2h_summary {
        f.d2h_pass = Some(s.pass);
        f.d2h_fail = Some(s.fail);
        // The oldest summary form prints no skipped count: the attempts are
        // then known only from a progress line.
        f.d2h_attempted = match s.skipped {
            Some(k) => Some(s.pass + s.fail + k),
            None => progress
                .map(|p| p.d2h_attempted)
                .filter(|&a| a >= s.pass + s.fail),
        };
        f.d2h_within_tol = s.within_tol;
    } else if let Some(d) = &e.divergence {
        f.d2h_fail = Some(d.failed);
        f.d2h_attempted = Some(d.attempted);
        f.d2h_pass = progress.map(|p| p.d2h_pass);
    } else if let Some(p) = progress {
        f.d2h_pass = Some(p.d2h_pass);
        f.d2h_fail = Some(p.d2h_fail);
        f.d2h_attempted = Some(p.d2h_attempted);
    }
    if e.d2h_fail_lines > f.d2h_fail.unwrap_or(0) {
        f.d2h_fail = Some(e.d2h_fail_lines);
    }
    [f.gpu_kernel_ms, f.gpu_graph_ms, f.gpu_total_ms] = e.gpu_ms;
    f.last_progress_kernel = progress.and_then(|p| book.name(&p.last));
    let last_started = e
        .last_event
        .as_ref()
        .and_then(|ev| ev.kernel.as_deref())
        .or_else(|| e.last_launch.as_ref().map(|l| l.name.as_str()));
    f.last_event_kernel = last_started.and_then(|k| book.name(k));
    let p = &e.placement;
    f.placement = if let Some(off) = &p.off {
        Some(Placement::Off { off: off.clone() })
    } else if p.active || p.summary.is_some() || p.named_total > 0 {
        Some(Placement::Active {
            placed: p.summary.map(|s| s.0),
            fell_back: p.summary.map_or(p.named_total, |s| s.1.max(p.named_total)),
            named: p.named.clone(),
        })
    } else {
        None
    };
}

fn sources(inputs: &[InputRecord], archive: Option<&ArchiveFacts>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(path) = archive.and_then(|a| a.path.as_deref()) {
        out.push(format!("{path} (hrr archive info)"));
    }
    // Replay logs first, then --info dumps, each in the order given, so the
    // list does not depend on the order of the inputs' kinds.
    for info in [false, true] {
        for i in inputs.iter().filter(|i| i.info_dump == info) {
            let kind = if info {
                "hrr-playback --info"
            } else {
                "replay log"
            };
            out.push(format!("{} ({kind})", i.source));
        }
    }
    out
}

fn illegal_access(message: &str) -> bool {
    message.contains("illegal memory access")
}

/// Outcome and class by precedence: version mismatch > timeout/hang > PASS
/// (divergence if D2H failures) > OOM > GPU memory fault > fatal API > HSA
/// queue abort > FAIL/D2H failures > aborted > killed by signal > unknown.
fn decide(
    e: &Evidence,
    how: &Inputs<'_>,
    replay: Option<&ReplayInfo>,
    preflight: Option<&PreflightView>,
) -> (Outcome, FaultClass) {
    use FaultClass as C;
    let exit_code = replay.and_then(|r| r.exit_code);
    let signal = e.signal_marker.or(replay.and_then(|r| r.signal));
    if e.version_mismatch.is_some() {
        return (Outcome::Abort, C::VersionMismatch);
    }
    let timed_out = e.timeout_marker.is_some() || replay.is_some_and(|r| r.timed_out);
    if timed_out
        || e.watchdog.is_some()
        || e.wall_limit_s.is_some()
        || exit_code == Some(WATCHDOG_EXIT)
    {
        return (Outcome::Hang, C::Hang);
    }
    if e.verdict == Some(true) {
        let class = if e.d2h_failures() > 0 {
            C::NanInfDivergence
        } else {
            C::ReplayPass
        };
        return (Outcome::Pass, class);
    }
    if e.oom.is_some() || e.queue_oom.is_some() {
        let stopped = e.queue_oom.is_some()
            || e.fatal_text.is_some()
            || e.replay_aborted
            || signal.is_some()
            || exit_code.is_some_and(|c| c != 0);
        return (
            if stopped {
                Outcome::Abort
            } else {
                Outcome::Unknown
            },
            C::ReplayOom,
        );
    }
    let hip_fault = e.gpu_error.as_ref().is_some_and(|g| illegal_access(&g.2))
        || e.sync_error
            .as_ref()
            .is_some_and(|s| illegal_access(&s.message))
        || e.fatal_gpu
            .as_ref()
            .is_some_and(|g| illegal_access(&g.message))
        || e.fatal_call
            .as_ref()
            .is_some_and(|g| illegal_access(&g.message));
    // A guard fault or an out-of-bounds region check is an illegal access
    // the replay's layout caught; a runtime fault line still decides the class.
    let caught = e.guard_fault_seen || e.region_oob > 0;
    if e.memory_fault.is_some() || e.fault_error.is_some() || hip_fault || caught {
        let read_only = e
            .memory_fault
            .as_ref()
            .is_some_and(|m| m.reason.to_ascii_lowercase().contains("read-only"));
        let class = if read_only {
            C::ReadOnlyPageFault
        } else {
            C::IllegalMemoryAccess
        };
        return (Outcome::Maf, class);
    }
    if e.fatal_text.is_some() || e.launch_error.is_some() {
        return (Outcome::Abort, C::ReplayFatalApi);
    }
    if e.setup_error.is_some() {
        return (Outcome::Abort, C::ReplayAborted);
    }
    if !e.queue_statuses.is_empty() {
        if e.queue_statuses
            .iter()
            .any(|q| MEMORY_STATUSES.contains(&q.code.as_str()))
        {
            return (Outcome::Maf, C::IllegalMemoryAccess);
        }
        return (Outcome::Abort, C::ReplayAborted);
    }
    let d2h = e.d2h_failures() > 0 || e.divergence.is_some() || e.d2h_validate_fail.1 > 0;
    if e.verdict == Some(false) || d2h {
        let class = if d2h {
            C::NanInfDivergence
        } else if e.events_failed.unwrap_or(0) > 0 || e.continued_errors.1 > 0 {
            C::ReplayFatalApi
        } else {
            C::Unknown
        };
        return (Outcome::Fail, class);
    }
    if e.replay_aborted {
        return (Outcome::Abort, C::ReplayAborted);
    }
    let exception = e.exception_marker.is_some() || replay.is_some_and(|r| r.exception.is_some());
    if signal.is_some() || exception {
        return (Outcome::Abort, C::ReplayCrashed);
    }
    let replay_evidence = replay.is_some()
        || how
            .inputs
            .iter()
            .any(|i| !i.info_dump || i.replay_lines > 0);
    if !replay_evidence {
        let blocked = !how.replay_skipped && preflight.is_some_and(PreflightView::blocked);
        let class = if blocked {
            C::PreflightBlocked
        } else {
            C::MetadataOnly
        };
        return (Outcome::Unknown, class);
    }
    (Outcome::Unknown, C::Unknown)
}

fn fault_details(f: &mut Finding, e: &Evidence, reading: &Reading<'_>) {
    if let Some(m) = &e.memory_fault {
        f.gpu_node = Some(m.node);
        f.fault_address = Some(m.address.clone());
        f.fault_reason = Some(m.reason.clone());
    } else if let Some((Some(addr), _)) = &e.fault_error {
        f.fault_address = Some(addr.clone());
    }
    f.kernarg_address = e.kernarg_address.clone();
    let in_flight = reading.failing_launch;
    let watchdog = e.watchdog.as_ref().and_then(|w| w.launch.as_ref());
    if let Some((g, w)) = &e.grid_workgroup {
        f.grid = Some(g.clone());
        f.workgroup = Some(w.clone());
    } else if let Some(l) = watchdog.or(in_flight).filter(|l| l.grid.is_some()) {
        f.grid = l.grid.clone();
        f.workgroup = l.block.clone();
    }
    let call = e.fatal_call.as_ref().or(e.fatal_gpu.as_ref());
    if let Some(c) = call {
        f.failing_thread = Some(c.thread);
        f.failing_call_index = Some(c.index);
        f.failing_api = Some(c.api.clone());
    } else if let Some(s) = &e.sync_error {
        f.failing_api = Some(s.api.clone());
        if let Some(ev) = e
            .last_event
            .as_ref()
            .filter(|ev| ev.api == s.api && !s.end_of_pass)
        {
            f.failing_thread = ev.thread;
            f.failing_call_index = Some(ev.index);
        }
    } else if let Some(ev) = &e.last_event {
        f.failing_thread = ev.thread;
        f.failing_call_index = Some(ev.index);
        f.failing_api = Some(ev.api.clone());
    } else if let (FaultClass::ReplayFatalApi, Some(c)) = (f.fault_class, &e.continued_errors.0) {
        f.failing_thread = Some(c.thread);
        f.failing_call_index = Some(c.index);
        f.failing_api = Some(c.api.clone());
    }
    f.failing_event_seq = watchdog
        .or(in_flight)
        .map(|l| l.seq)
        .or(e.divergence.as_ref().and_then(|d| d.seq))
        .or(if f.fault_class == FaultClass::NanInfDivergence {
            e.d2h_first_fail_seq
        } else {
            None
        });
}

/// Names truncated by a table column (`...`) are never used.
fn usable(name: &str) -> bool {
    !name.is_empty() && !name.ends_with("...")
}

/// The kernel of a single-kernel archive, from the summary or `--info`.
fn single_kernel(e: &Evidence, archive: Option<&ArchiveFacts>) -> Option<String> {
    if let Some(k) = archive.and_then(ArchiveFacts::single_kernel) {
        return Some(k.to_string());
    }
    if archive.is_some_and(|a| !a.kernels.is_empty()) {
        return None;
    }
    let info = &e.info;
    if info.call_count_rows == 1 {
        return info.call_counts.first().map(|c| c.0.clone());
    }
    if info.call_count_rows == 0 && info.kernels == Some(1) && info.summary_names.len() == 1 {
        return info.summary_names.first().cloned();
    }
    None
}

/// Kernel fallback order: fault line → abort line → GPU-error / `[HRR
/// launch]` line → last verbose event → single-kernel archive. Which tiers
/// may name a kernel depends on the class: a crash, a version mismatch or a
/// D2H mismatch implicates none; a hang only what the watchdog or an
/// unfinished traced launch names; a fatal API error the kernel-not-found
/// line, the GPU-error line or the traced launch, and none when the failing
/// call launches no kernel; a queue abort for lack of resources its bracket.
/// A name the player printed compacted is expanded through the archive's
/// kernel table or not used ([`NameBook`]).
fn attribute_kernel(
    f: &mut Finding,
    e: &Evidence,
    archive: Option<&ArchiveFacts>,
    replay: Option<&ReplayInfo>,
    reading: &Reading<'_>,
    book: &mut NameBook,
) {
    use KernelSource as K;
    let queue_abort = !e.queue_statuses.is_empty();
    let tiers: &[K] = match f.fault_class {
        FaultClass::IllegalMemoryAccess | FaultClass::ReadOnlyPageFault => &[
            K::FaultLine,
            K::AbortLine,
            K::GpuErrorLine,
            K::TraceKernels,
            K::LastEvent,
            K::SingleKernelArchive,
        ],
        FaultClass::ReplayAborted if queue_abort => &[
            K::FaultLine,
            K::AbortLine,
            K::GpuErrorLine,
            K::TraceKernels,
            K::LastEvent,
            K::SingleKernelArchive,
        ],
        FaultClass::ReplayFatalApi => &[K::NotFoundLine, K::GpuErrorLine, K::TraceKernels],
        FaultClass::ReplayOom if e.queue_oom.is_some() => &[K::AbortLine],
        FaultClass::Hang => &[K::FaultLine, K::TraceKernels],
        _ => &[],
    };
    let in_flight = reading.failing_launch;
    for &tier in tiers {
        let candidate = match tier {
            K::FaultLine => e
                .fault_error
                .as_ref()
                .and_then(|f| f.1.clone())
                .or_else(|| e.hang_analysis_kernel.clone())
                .or_else(|| e.guard_fault_kernel.as_deref().and_then(|k| book.name(k)))
                .or_else(|| {
                    e.watchdog
                        .as_ref()
                        .and_then(|w| w.launch.as_ref())
                        .and_then(|l| book.name(&l.name))
                }),
            K::AbortLine => e.queue_abort_kernel.clone(),
            K::GpuErrorLine => e.gpu_error.as_ref().map(|g| g.0.clone()),
            K::TraceKernels => in_flight.and_then(|l| book.name(&l.name)),
            // The last launch to start, or the only kernel there is: both
            // say what ran before a failure, nothing about a failure at a
            // call that launches no kernel.
            K::LastEvent if reading.non_launch => None,
            K::SingleKernelArchive if reading.non_launch => None,
            K::LastEvent => e
                .last_event
                .as_ref()
                .and_then(|ev| ev.kernel.as_deref())
                .and_then(|k| book.name(k)),
            K::SingleKernelArchive => single_kernel(e, archive),
            K::NotFoundLine => reading.not_found.map(str::to_string),
        };
        if let Some(name) = candidate.filter(|n| usable(n)) {
            if let Some(note) = advice::attribution_note(tier, &name, in_flight, replay) {
                f.add_note(note);
            }
            f.kernel_name = Some(name);
            f.kernel_source = Some(tier);
            return;
        }
    }
}

/// Kernel family (upstream-triage §7.5 step 7): hipBLASLt GEMMs with macro
/// tile and stream-K variant, PyTorch kernels, other.
pub(crate) fn kernel_family(name: &str) -> String {
    if name.starts_with("Cijk_") {
        let mut fam = String::from("hipblaslt_gemm");
        if let Some(tile) = macro_tile(name) {
            fam.push_str("/MT");
            fam.push_str(tile);
        }
        if name.contains("_SK3_") {
            fam.push_str("/streamk");
        } else if name.contains("_SK2_") {
            fam.push_str("/streamk_variant");
        }
        return fam;
    }
    if name.starts_with("_ZN") || name.contains("at::native::") {
        return "pytorch_kernel".into();
    }
    "other".into()
}

/// `AxBxC` of the first `_MT<A>x<B>x<C>` in a name.
fn macro_tile(name: &str) -> Option<&str> {
    name.match_indices("_MT").find_map(|(i, _)| {
        let rest = &name[i + 3..];
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == 'x'))
            .unwrap_or(rest.len());
        let tile = &rest[..end];
        let parts: Vec<&str> = tile.split('x').collect();
        (parts.len() >= 3 && parts[..3].iter().all(|p| !p.is_empty())).then(|| {
            let len = parts[0].len() + parts[1].len() + parts[2].len() + 2;
            &tile[..len]
        })
    })
}
