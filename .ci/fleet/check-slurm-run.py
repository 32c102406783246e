"""Checks what the Slurm recipe of docs/fleet/ left behind (.ci/fleet/slurm-recipe).

Computed here from the archives on disk and the finding files, independently
of hrr: every process of every listed root has exactly one finding file, named
<root name>-<hash>-pid-<pid>.finding.json; the array's tasks each took their
shard and ran on a GPU Slurm granted, named by ROCR_VISIBLE_DEVICES alone;
with --replayed, every process replayed on hrr's GPU 0; the report job
started after every task ended (afterany); and the report's groups are the
crash signatures counted here. Prints one line per failed check and exits 1 when any failed.
"""

import argparse
import collections
import json
import os
import re
import sys

# Labels that say how a finding was made, not what crashed: not part of a
# crash signature.
NOT_SIGNATURE = {"MULTI-PROCESS", "BUILD-NEEDED"}
FINDING_NAME = re.compile(r"^(?P<root>.+)-(?P<hash>[0-9a-f]{6,})-pid-(?P<pid>[0-9]+)\.finding\.json$")

problems = []


def check(ok, what):
    if not ok:
        problems.append(what)
    return ok


def listed_roots(path):
    with open(path, encoding="utf-8") as f:
        lines = [line.strip() for line in f]
    return [line for line in lines if line and not line.startswith("#")]


def processes(root):
    """The pid-* directories of a root that hold an events.bin."""
    return sorted(
        os.path.realpath(os.path.join(root, d))
        for d in os.listdir(root)
        if d.startswith("pid-") and os.path.isfile(os.path.join(root, d, "events.bin"))
    )


def signature(finding):
    labels = {entry["label"] for entry in finding.get("labels", [])} - NOT_SIGNATURE
    return (
        finding["outcome"],
        finding["fault_class"],
        finding.get("kernel_name"),
        finding.get("failing_api"),
        tuple(sorted(labels)),
    )


def report_signature(sig):
    return (
        sig["outcome"],
        sig["fault_class"],
        sig.get("kernel_name"),
        sig.get("failing_api"),
        tuple(sorted(set(sig.get("labels", [])) - NOT_SIGNATURE)),
    )


def jobcomp(path):
    """The job completion records: one dict of KEY=VALUE fields per job."""
    with open(path, encoding="utf-8") as f:
        return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", required=True)
    ap.add_argument("--findings", required=True)
    ap.add_argument("--report", required=True, help="the report files' path without extension")
    ap.add_argument("--jobcomp", required=True)
    ap.add_argument("--jobs", required=True, help="the directory of the jobs' logs")
    ap.add_argument("--array", required=True)
    ap.add_argument("--tasks", type=int, required=True)
    ap.add_argument("--report-job", required=True)
    ap.add_argument("--gpus", default="0,1", help="the fake GPUs the tasks may be granted")
    ap.add_argument("--fleet", action="store_true", help="the list is hrr-synth's fleet of 12")
    ap.add_argument("--replayed", action="store_true", help="the tasks replayed (test player)")
    a = ap.parse_args()

    # Every process of every listed root, once.
    roots = listed_roots(a.list)
    expected = {}
    for root in roots:
        for proc in processes(root):
            expected[proc] = os.path.realpath(root)
    check(len(roots) >= 4 and len(expected) > len(roots), f"{len(roots)} roots, {len(expected)} processes")

    if not check(os.path.isdir(a.findings), f"{a.findings}: no finding directory"):
        names = []
    else:
        names = sorted(n for n in os.listdir(a.findings) if n.endswith(".finding.json"))
    seen = collections.Counter()
    root_hashes = collections.defaultdict(set)
    findings = []
    for name in names:
        with open(os.path.join(a.findings, name), encoding="utf-8") as f:
            finding = json.load(f)
        findings.append(finding)
        archive = os.path.realpath(finding["archive"])
        seen[archive] += 1
        m = FINDING_NAME.match(name)
        if check(m is not None, f"{name}: not <root name>-<hash>-pid-<pid>.finding.json"):
            root = expected.get(archive, "")
            check(m["root"] == os.path.basename(root), f"{name}: root name is not that of {archive}")
            root_hashes[root].add(m["hash"])
            check(archive.endswith(f"/pid-{m['pid']}"), f"{name}: pid is not that of {archive}")
    for proc in expected:
        check(seen[proc] == 1, f"{proc}: {seen[proc]} finding files, want 1")
    for archive in seen.keys() - expected.keys():
        check(False, f"{archive}: a finding for no listed process")
    # One hash per root, and distinct roots (of one name too) apart.
    for root, hashes in root_hashes.items():
        check(len(hashes) == 1, f"{root}: finding names hash its path differently: {hashes}")
    all_hashes = [h for hashes in root_hashes.values() for h in hashes]
    check(len(set(all_hashes)) == len(all_hashes), f"two roots share a path hash: {dict(root_hashes)}")
    names_of = collections.Counter(os.path.basename(os.path.normpath(r)) for r in roots)
    check(not a.fleet or names_of["capture.hrr"] >= 3, f"too few roots named capture.hrr: {names_of}")

    # The damaged root's finding says its archive is damaged.
    damaged = [f for f in findings if "/damaged/" in f["archive"]]
    check(
        not a.fleet
        or len(damaged) == 1
        and (damaged[0].get("error") or (damaged[0].get("archive_health") or {}).get("truncated")),
        f"the damaged archive's finding says neither an error nor a truncated archive: {damaged}",
    )

    # A replayed fleet: every process replayed, with no error, on the one
    # GPU hrr saw (index 0 within the task's mask).
    for f in findings if a.replayed else []:
        replay = f.get("replay") or {}
        check(
            not f.get("error") and replay.get("exit_code") == 0 and replay.get("gpu") == 0,
            f"{f['archive']}: not replayed on GPU 0: error {f.get('error')!r}, replay {str(replay)[:300]}",
        )

    # Each task ran its shard on one granted GPU, ROCR_VISIBLE_DEVICES alone.
    mask = re.compile(rf"ROCR_VISIBLE_DEVICES=(?:{'|'.join(a.gpus.split(','))}) CUDA_VISIBLE_DEVICES=\(unset\)")
    for k in range(a.tasks):
        log = os.path.join(a.jobs, f"hrr-triage-{a.array}_{k}.out")
        if not check(os.path.isfile(log), f"{log}: missing"):
            continue
        with open(log, encoding="utf-8", errors="replace") as f:
            text = f.read()
        check(f"hrr triage shard {k}/{a.tasks} " in text, f"{log}: no 'shard {k}/{a.tasks}' line")
        check(
            mask.search(text) is not None,
            f"{log}: not on GPU {a.gpus} with ROCR_VISIBLE_DEVICES alone: {text[:300]}",
        )

    # The array's tasks all completed; the report started after the last ended.
    jobs = jobcomp(a.jobcomp)
    tasks = [j for j in jobs if j.get("ArrayJobId") == a.array]
    check(
        sorted(int(j["ArrayTaskId"]) for j in tasks) == list(range(a.tasks)),
        f"array {a.array} tasks recorded: {[j.get('ArrayTaskId') for j in tasks]}",
    )
    for j in tasks:
        check(
            j.get("JobState") == "COMPLETED" and j.get("ExitCode") == "0:0",
            f"task {j.get('ArrayTaskId')}: {j.get('JobState')} exit {j.get('ExitCode')}",
        )
    rep = [j for j in jobs if j.get("JobId") == a.report_job]
    if check(len(rep) == 1, f"report job {a.report_job} not recorded once"):
        check(
            rep[0].get("JobState") == "COMPLETED",
            f"report job {a.report_job}: {rep[0].get('JobState')} exit {rep[0].get('ExitCode')}",
        )
        last_end = max((j["EndTime"] for j in tasks), default="")
        check(
            rep[0]["StartTime"] >= last_end,
            f"report started {rep[0]['StartTime']}, before the last task ended {last_end}",
        )

    # The report's groups are the signatures counted here.
    report = {}
    if check(os.path.isfile(a.report + ".json"), f"{a.report}.json: missing"):
        with open(a.report + ".json", encoding="utf-8") as f:
            report = json.load(f)
    check(report.get("schema_version") == 1, f"report schema_version {report.get('schema_version')}")
    groups = report.get("groups", [])
    check(
        sum(g["count"] for g in groups) == len(findings),
        f"report counts sum to {sum(g['count'] for g in groups)}, {len(findings)} findings",
    )
    want = collections.Counter(signature(f) for f in findings)
    got = collections.Counter()
    for g in groups:
        got[report_signature(g["signature"])] += g["count"]
    check(got == want, f"report groups {dict(got)}, computed here {dict(want)}")
    check(len(want) >= 3, f"only {len(want)} signatures among the findings: {dict(want)}")
    if check(os.path.isfile(a.report + ".html"), f"{a.report}.html: missing"):
        with open(a.report + ".html", encoding="utf-8") as f:
            html = f.read().lower()
        check("<html" in html and "<table" in html, "the html report has no table")

    for p in problems:
        print(f"check failed: {p}", file=sys.stderr)
    if problems:
        return 1
    print(
        f"{len(expected)} processes of {len(roots)} roots: one finding each over {a.tasks} tasks; "
        f"report: {len(groups)} groups summing to {len(findings)}, matching the signatures counted here"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
