//! From evidence to a finding: the upstream precedence (upstream-triage.md
//! §7.3/§7.4, extended to the real shapes of playback-output.md §5), the
//! DESIGN §6 rules, and the kernel attribution fallback order.

use super::advice;
use super::evidence::Evidence;
use super::facts::ArchiveFacts;
use super::InputRecord;
use crate::finding::{
    ArchiveHealth, FaultClass, Finding, KernelSource, Outcome, Placement, ReplayInfo,
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
    fill_archive(&mut f, e, archive, preflight);
    fill_replay(&mut f, e, replay);
    f.preflight = preflight.cloned();
    f.replay = replay.cloned().map(|mut r| {
        r.stopped_by = crate::replay::StoppedBy::from_evidence(
            e.timeout_marker.is_some() || r.timed_out,
            e.watchdog.is_some(),
            e.wall_limit_s.is_some(),
        );
        r
    });
    f.sources = sources(how.inputs, archive);
    (f.outcome, f.fault_class) = decide(e, how, replay, preflight);
    fault_details(&mut f, e);
    attribute_kernel(&mut f, e, archive, replay);
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
    advice::annotate(&mut f, e, archive);
    f
}

fn fill_archive(f: &mut Finding, e: &Evidence, archive: Option<&ArchiveFacts>, pf: Option<&Value>) {
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
    if let Some(pc) = pf.and_then(|p| p.get("capture")) {
        let text = |k: &str| pc.get(k).and_then(Value::as_str).map(str::to_string);
        c.hip_runtime_version = c
            .hip_runtime_version
            .or_else(|| text("hip_runtime_version"));
        c.comgr_version = c.comgr_version.or_else(|| text("comgr_version"));
        c.device_count = c
            .device_count
            .or_else(|| pc.get("device_count").and_then(Value::as_u64));
        // hrr preflight's `capture`: devices[] with `gcn_arch_name`
        let first_arch = pc
            .get("devices")
            .and_then(Value::as_array)
            .and_then(|d| d.iter().find_map(|d| d.get("gcn_arch_name")?.as_str()))
            .map(str::to_string);
        c.gcn_arch = c.gcn_arch.or(first_arch);
    }
    f.capture = c;
}

fn fill_replay(f: &mut Finding, e: &Evidence, replay: Option<&ReplayInfo>) {
    f.replay_exit_code = replay.and_then(|r| r.exit_code);
    f.replay_signal = e.signal_marker.or(replay.and_then(|r| r.signal));
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
        f.d2h_attempted = Some(s.pass + s.fail + s.skipped);
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
    f.last_progress_kernel = progress.map(|p| p.last.clone());
    f.last_event_kernel = e
        .last_event
        .as_ref()
        .and_then(|ev| ev.kernel.clone())
        .or_else(|| e.last_launch.as_ref().map(|l| l.name.clone()));
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
    preflight: Option<&Value>,
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
    if e.oom.is_some() {
        let stopped = e.fatal_text.is_some()
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
        || e.fatal_gpu
            .as_ref()
            .is_some_and(|g| illegal_access(&g.message))
        || e.fatal_call
            .as_ref()
            .is_some_and(|g| illegal_access(&g.message));
    if e.memory_fault.is_some() || e.fault_error.is_some() || hip_fault {
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
    if signal.is_some() {
        return (Outcome::Abort, C::ReplayCrashed);
    }
    let replay_evidence = replay.is_some()
        || how
            .inputs
            .iter()
            .any(|i| !i.info_dump || i.replay_lines > 0);
    if !replay_evidence {
        let blocked = !how.replay_skipped
            && preflight
                .and_then(|p| p.get("status"))
                .and_then(Value::as_str)
                .is_some_and(|s| s == "blocked");
        let class = if blocked {
            C::PreflightBlocked
        } else {
            C::MetadataOnly
        };
        return (Outcome::Unknown, class);
    }
    (Outcome::Unknown, C::Unknown)
}

fn fault_details(f: &mut Finding, e: &Evidence) {
    if let Some(m) = &e.memory_fault {
        f.gpu_node = Some(m.node);
        f.fault_address = Some(m.address.clone());
        f.fault_reason = Some(m.reason.clone());
    } else if let Some((Some(addr), _)) = &e.fault_error {
        f.fault_address = Some(addr.clone());
    }
    f.kernarg_address = e.kernarg_address.clone();
    let in_flight = e.last_launch.as_ref().filter(|l| !l.completed);
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
/// unfinished traced launch names.
fn attribute_kernel(
    f: &mut Finding,
    e: &Evidence,
    archive: Option<&ArchiveFacts>,
    replay: Option<&ReplayInfo>,
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
        FaultClass::ReplayFatalApi => &[K::GpuErrorLine, K::TraceKernels],
        FaultClass::Hang => &[K::FaultLine, K::TraceKernels],
        _ => &[],
    };
    let in_flight = e.last_launch.as_ref().filter(|l| !l.completed);
    for &tier in tiers {
        let candidate = match tier {
            K::FaultLine => e
                .fault_error
                .as_ref()
                .and_then(|f| f.1.clone())
                .or_else(|| e.hang_analysis_kernel.clone())
                .or_else(|| {
                    e.watchdog
                        .as_ref()
                        .and_then(|w| w.launch.as_ref())
                        .map(|l| l.name.clone())
                }),
            K::AbortLine => e.queue_abort_kernel.clone(),
            K::GpuErrorLine => e.gpu_error.as_ref().map(|g| g.0.clone()),
            K::TraceKernels => in_flight.map(|l| l.name.clone()),
            K::LastEvent => e.last_event.as_ref().and_then(|ev| ev.kernel.clone()),
            K::SingleKernelArchive => single_kernel(e, archive),
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
