#!/usr/bin/env python3
"""Benchmark stand-in for the upstream analyze_replay_finding.py.

A re-implementation, written from reference/upstream-triage.md section 7, of
the upstream analyzer's reading strategy: every input is read whole into one
string, then each extraction rule runs its own regular expression over the
entire text (about thirty passes), then the per-input class and outcome
precedence (7.3, 7.4), the merge across inputs and finalize (7.5) run. It
exists only so `hrr-bench-classify` can time hrr against the upstream
approach on the same file; it is not used by hrr.
"""

import argparse
import json
import re
import sys

HEX = r"0x[0-9a-fA-F]+"
RE_CAPTURE_HIP = re.compile(r"\[capture\] HIP_SO=(\S+)")
RE_ARCHIVE_RECOVERED = re.compile(r"recovered (\d+) events")
RE_ARCHIVE_LINE = re.compile(r"Archive : (\d+) events, (\d+) kernels, (\d+) blobs, (\d+) code objects")
RE_ARCHIVE_COMPLETE = re.compile(r"Complete:\s+(yes|no)", re.IGNORECASE)
RE_INFO_RECOVERED = re.compile(r"^Recovered:\s+(\d+) events\s*$", re.MULTILINE)
RE_INFO_EVENTS = re.compile(r"^Events:\s+(\d+)\s*$", re.MULTILINE)
RE_INFO_KERNELS = re.compile(r"^Kernels:\s+(\d+)\s*$", re.MULTILINE)
RE_INFO_LAUNCH_COUNT = re.compile(r"hip\w*LaunchKernel\s+(\d+)")
RE_INFO_KERNEL_ROW = re.compile(r"^\s*(?:\d+\s+)?([A-Za-z_][^\s\[]*)\s+\[[^\]]*\]\s+\[[^\]]*\]", re.MULTILINE)
RE_HSA_STATUS = re.compile(r"HSA_STATUS_ERROR_(MEMORY_FAULT|ABORTED|EXCEPTION)")
RE_SIGNAL = re.compile(r"replay killed by signal (\d+)")
RE_TIMEOUT = re.compile(r"replay timed out after (\d+)s")
RE_VERSION_MISMATCH = re.compile(r"\[HRR\] Version mismatch: file=(\d+) reader=(\d+)")
RE_PROGRESS = re.compile(
    r"\[HRR progress\].*?seq=(\d+).*?kernels=(\d+).*?d2h_pass=(\d+).*?d2h_fail=(\d+)"
    r".*?d2h_attempted=(\d+).*?last=\"([^\"]*)\""
)
RE_FATAL_EVENT = re.compile(r"\[HRR\] Fatal: T(\d+) Event (\d+) \(([^)]+)\) returned (\d+) \(([^)]+)\)")
RE_FATAL_GPU = re.compile(r"\[HRR\] Fatal: GPU error after T(\d+) Event (\d+) \(([^)]+)\): (\d+) \(([^)]+)\)")
RE_FATAL_GENERIC = re.compile(r"\[HRR\] Fatal: ")
RE_EVENT_PROGRESS = re.compile(r"(?:\[HRR\] )?Event (\d+): (\w+)(?:[^\n]*?-> Kernel '([^']*)')?")
RE_MAF = re.compile(r"Memory access fault by GPU node-(\d+).*on address (" + HEX + r")\.\s*Reason:\s*([^.\n]+)")
RE_MEM_FAULT_ERR = re.compile(r"Memory Fault Error \[[^\]]*?faulting addr: (" + HEX + r"), kernel: ([^\]]+)\]")
RE_QUEUE_ABORT_KERNEL = re.compile(r"aborting with error[^\n]*\[[^\]]*kernel: ([^\]]+)\]")
RE_CIJK = re.compile(r"(Cijk_[A-Za-z0-9_]+)")
RE_KERNARG = re.compile(r"kernarg_address=(0x[0-9a-fA-F]+)")
RE_GRID = re.compile(r"grid=\[([^\]]*)\], workgroup=\[([^\]]*)\]")
RE_D2H_SUMMARY = re.compile(r"D2H checks\s+: (\d+) pass.*?, (\d+) fail, (\d+) skipped")
RE_KERNELS_LAUNCHED = re.compile(r"\[HRR\]\s+Kernels launched:\s*(\d+)")
RE_PLACEMENT_NAMED = re.compile(
    r"\[HRR\] Placement: (.+?) (0x[0-9a-fA-F]+) \((\d+) bytes\) not placed at its recorded address: ([^\n]*?)\. It replays elsewhere"
)
RE_PLACEMENT_SUMMARY = re.compile(r"\[HRR\]\s+Placement\s+: (\d+) placed at capture address, (\d+) fell back")
RE_PLACEMENT_OFF = re.compile(r"\[HRR\] Placement : off \(([^)]*)\)")
RE_PASS = re.compile(r"\[HRR\] PASS")
RE_FAIL = re.compile(r"\[HRR\] FAIL")
RE_OOM = re.compile(r"out of memory|hipErrorOutOfMemory", re.IGNORECASE)
RE_ABORTED = re.compile(r"Replay aborted|aborting replay")


class Finding:
    def __init__(self):
        self.outcome = "UNKNOWN"
        self.fault_class = "unknown"
        for k in ("fault_address", "fault_reason", "failing_event_seq", "failing_call_index",
                  "failing_thread", "failing_api", "kernel_name", "kernel_family", "kernarg_address",
                  "grid", "workgroup", "gpu_node", "replay_signal", "last_progress_kernel",
                  "last_event_kernel", "kernels_launched", "d2h_pass", "d2h_fail", "d2h_attempted",
                  "archive_events", "archive_kernels", "archive_complete", "archive_format_version",
                  "reader_format_version", "capture_hip_so", "placement_fallbacks", "placement_off"):
            setattr(self, k, None)
        self.archive_kernel_names = []
        self.placement_named = []
        self.sources = []
        self.notes = []

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)


def extract(f, text):
    """Section 7.2: every rule is its own pass over the whole text."""
    for m in RE_CAPTURE_HIP.finditer(text):
        f.capture_hip_so = m.group(1)
    m = RE_ARCHIVE_RECOVERED.search(text)
    if m:
        f.archive_events = int(m.group(1))
    m = RE_ARCHIVE_LINE.search(text)
    if m:
        f.archive_events, f.archive_kernels = int(m.group(1)), int(m.group(2))
    m = RE_ARCHIVE_COMPLETE.search(text)
    if m:
        f.archive_complete = m.group(1).lower()
    for rx, attr in ((RE_INFO_RECOVERED, "archive_events"), (RE_INFO_EVENTS, "archive_events"),
                     (RE_INFO_KERNELS, "archive_kernels")):
        m = rx.search(text)
        if m:
            setattr(f, attr, int(m.group(1)))
    if f.archive_kernels is None:
        m = RE_INFO_LAUNCH_COUNT.search(text)
        if m:
            f.archive_kernels = int(m.group(1))
    for name in RE_INFO_KERNEL_ROW.findall(text):
        if not name.endswith("...") and name not in f.archive_kernel_names:
            f.archive_kernel_names.append(name)
    hsa = RE_HSA_STATUS.findall(text)
    has_pass = RE_PASS.search(text) is not None
    if not has_pass:
        for code in hsa:
            f.note("the queue aborted with HSA_STATUS_ERROR_" + code)
    m = RE_SIGNAL.search(text)
    if m:
        f.replay_signal = int(m.group(1))
    vm = RE_VERSION_MISMATCH.search(text)
    if vm:
        f.archive_format_version, f.reader_format_version = int(vm.group(1)), int(vm.group(2))
        f.note("archive wire version %s does not match hrr-playback reader %s" % vm.groups())
    progress = RE_PROGRESS.findall(text)
    for seq, kernels, p, fl, a, last in progress:
        f.failing_event_seq, f.kernels_launched = int(seq), int(kernels)
        f.d2h_pass, f.d2h_fail, f.d2h_attempted = int(p), int(fl), int(a)
    if progress:
        f.last_progress_kernel = progress[-1][5]
    fatal = RE_FATAL_EVENT.search(text) or RE_FATAL_GPU.search(text)
    if fatal:
        f.failing_thread, f.failing_call_index, f.failing_api = int(fatal.group(1)), int(fatal.group(2)), fatal.group(3)
    events = RE_EVENT_PROGRESS.findall(text)
    if events:
        index, api, kernel = events[-1]
        if fatal is None:
            f.failing_call_index, f.failing_api = int(index), api
        f.last_event_kernel = kernel
    maf = RE_MAF.search(text)
    if maf:
        f.gpu_node, f.fault_address, f.fault_reason = int(maf.group(1)), maf.group(2), maf.group(3)
    mfe = RE_MEM_FAULT_ERR.search(text)
    if mfe:
        f.fault_address = f.fault_address or mfe.group(1)
        f.kernel_name = mfe.group(2)
    if not f.kernel_name:
        m = RE_QUEUE_ABORT_KERNEL.search(text)
        if m:
            f.kernel_name = m.group(1)
    if not f.kernel_name:
        m = RE_CIJK.search(text)
        if m:
            f.kernel_name = m.group(1)
    m = RE_KERNARG.search(text)
    if m:
        f.kernarg_address = m.group(1)
    m = RE_GRID.search(text)
    if m:
        f.grid, f.workgroup = m.group(1), m.group(2)
    m = RE_D2H_SUMMARY.search(text)
    if m:
        p, fl, s = (int(x) for x in m.groups())
        f.d2h_pass, f.d2h_fail, f.d2h_attempted = p, fl, p + fl + s
    m = RE_KERNELS_LAUNCHED.search(text)
    if m:
        f.kernels_launched = int(m.group(1))
    for api, addr, _size, reason in RE_PLACEMENT_NAMED.findall(text):
        f.placement_named.append("%s %s: %s" % (api, addr, reason))
    m = RE_PLACEMENT_SUMMARY.search(text)
    if m:
        f.placement_fallbacks = int(m.group(2))
    m = RE_PLACEMENT_OFF.search(text)
    if m:
        f.placement_off = m.group(1)
    return has_pass, hsa, vm, fatal, maf, mfe


def classify(f, text, has_pass, hsa, vm, fatal, maf, mfe):
    """Sections 7.3 and 7.4, per input."""
    timeout = RE_TIMEOUT.search(text)
    fail = RE_FAIL.search(text)
    aborted = RE_ABORTED.search(text)
    generic = RE_FATAL_GENERIC.search(text)
    if vm:
        cls = "version_mismatch"
    elif timeout:
        cls = "hang"
    elif has_pass:
        cls = "nan_inf_divergence" if (f.d2h_fail or 0) > 0 else "replay_pass"
    elif RE_OOM.search(text):
        cls = "replay_oom"
    elif maf or mfe:
        cls = "read_only_page_fault" if "read-only" in (f.fault_reason or "") else "illegal_memory_access"
    elif generic:
        cls = "replay_oom" if "out of memory" in text else "replay_fatal_api"
    elif hsa:
        cls = "illegal_memory_access" if "MEMORY_FAULT" in hsa else "replay_aborted"
    elif fail or (f.d2h_fail or 0) > 0:
        cls = "nan_inf_divergence"
    elif aborted:
        cls = "replay_aborted"
    elif f.replay_signal is not None and RE_SIGNAL.search(text):
        cls = "replay_crashed"
    else:
        cls = "unknown"
    if cls != "unknown" or f.fault_class in (None, "unknown"):
        f.fault_class = cls
    if timeout:
        f.outcome = "HANG"
    elif has_pass:
        f.outcome = "PASS"
    elif maf or mfe:
        f.outcome = "MAF"
    elif fail:
        f.outcome = "FAIL"
    elif hsa:
        f.outcome = "MAF" if "MEMORY_FAULT" in hsa else "ABORT"
    elif (aborted and "aborting replay" in text) or fatal or vm or RE_SIGNAL.search(text):
        f.outcome = "ABORT"


def family(name):
    if not name:
        return None
    if name.startswith("Cijk_"):
        fam = "hipblaslt_gemm"
        m = re.search(r"_MT(\d+x\d+x\d+)", name)
        if m:
            fam += "/MT" + m.group(1)
        if "_SK3_" in name:
            fam += "/streamk"
        elif "_SK2_" in name:
            fam += "/streamk_variant"
        return fam
    if name.startswith("_ZN") or "at::native::" in name:
        return "pytorch_kernel"
    return "other"


def finalize(f):
    """Section 7.5."""
    if f.fault_class == "replay_pass":
        for k in ("kernel_name", "kernel_family", "last_event_kernel", "last_progress_kernel",
                  "failing_event_seq", "failing_call_index", "failing_thread", "failing_api"):
            setattr(f, k, None)
        return
    if f.fault_class == "replay_crashed":
        f.kernel_name = f.kernel_family = None
        f.note("the replay process was killed by signal %s without printing a verdict" % f.replay_signal)
        return
    if not f.kernel_name and f.last_event_kernel:
        f.kernel_name = f.last_event_kernel
        f.note("kernel name taken from the last launch to start before the fault (%s)" % f.kernel_name)
    if not f.kernel_name and f.archive_kernels == 1 and len(f.archive_kernel_names) == 1:
        f.kernel_name = f.archive_kernel_names[0]
        f.note("kernel name inferred from the archive, which contains exactly one kernel (%s)" % f.kernel_name)
    if f.fault_class in ("illegal_memory_access", "read_only_page_fault", "replay_aborted") and f.kernel_name \
            and ("_ZN2at6native" in f.kernel_name or "at::native::" in f.kernel_name):
        f.note("ATen caveat. Confirm against the user's original failure signature before reporting this as their bug.")
    if ((f.placement_fallbacks or 0) > 0 or f.placement_off) and f.outcome != "PASS":
        f.note("replay fidelity: " + (", ".join(f.placement_named) or "placement was off (%s)" % f.placement_off))
    f.kernel_family = family(f.kernel_name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", action="append", default=[])
    ap.add_argument("--format", default="json", choices=["json", "markdown"])
    args = ap.parse_args()
    f = Finding()
    for path in args.log:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            f.note("log not found: " + path)
            continue
        f.sources.append(path)
        classify(f, text, *extract(f, text))
    finalize(f)
    json.dump(f.__dict__, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
