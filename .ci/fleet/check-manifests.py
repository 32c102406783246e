"""What the Kubernetes recipe of docs/fleet/ must say beyond the API schema
(which kubernetes-validate checks, .ci/fleet/k8s-manifests): the triage Job
is Indexed, its shard count SHARDS is its completions, its pods take
JOB_COMPLETION_INDEX as the shard and one amd.com/gpu, the report Job asks
for no GPU, and both mount the claim fleet-volume.yaml makes.

    python3 check-manifests.py VOLUME.yaml TRIAGE.yaml REPORT.yaml

Prints one line per failed check and exits 1 when any failed.
"""

import sys

import yaml

problems = []


def check(ok, what):
    if not ok:
        problems.append(what)
    return ok


def one(path, kind):
    with open(path, encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    check(len(docs) == 1 and docs[0].get("kind") == kind, f"{path}: not one {kind}")
    return docs[0] if docs else {}


def pod(job):
    return job.get("spec", {}).get("template", {}).get("spec", {})


def claims(job):
    return {
        v["persistentVolumeClaim"]["claimName"]
        for v in pod(job).get("volumes", [])
        if "persistentVolumeClaim" in v
    }


def gpus(container):
    res = container.get("resources", {})
    return res.get("limits", {}).get("amd.com/gpu"), res.get("requests", {}).get("amd.com/gpu")


def main(volume_path, triage_path, report_path):
    volume = one(volume_path, "PersistentVolumeClaim")
    triage = one(triage_path, "Job")
    report = one(report_path, "Job")
    claim = volume.get("metadata", {}).get("name")
    check("ReadWriteMany" in volume.get("spec", {}).get("accessModes", []), "the claim is not ReadWriteMany")

    spec = triage.get("spec", {})
    check(spec.get("completionMode") == "Indexed", f"triage completionMode {spec.get('completionMode')!r}")
    completions = spec.get("completions")
    check(isinstance(completions, int) and completions > 0, f"triage completions {completions!r}")
    check(
        1 <= spec.get("parallelism", 1) <= (completions or 0),
        f"triage parallelism {spec.get('parallelism')!r} for {completions!r} completions",
    )
    check(pod(triage).get("restartPolicy") in ("Never", "OnFailure"), "triage restartPolicy")
    containers = pod(triage).get("containers", [])
    check(len(containers) == 1, f"triage pod has {len(containers)} containers, want 1")
    container = containers[0] if containers else {}
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    check(env.get("SHARDS") == str(completions), f"SHARDS {env.get('SHARDS')!r} is not completions {completions!r}")
    script = " ".join(container.get("command", []) + container.get("args", []))
    check('--shard "$JOB_COMPLETION_INDEX/$SHARDS"' in script, f"the shard is not JOB_COMPLETION_INDEX/SHARDS: {script}")
    check("--from /fleet/list.txt" in script and "-o /fleet/findings" in script, f"list or output: {script}")
    check("--gpu " not in script, "a --gpu in a pod that has one GPU")
    check(gpus(container)[0] in (1, "1"), f"triage amd.com/gpu limit {gpus(container)[0]!r}, want 1")
    mounts = {m["mountPath"] for m in container.get("volumeMounts", [])}
    check("/fleet" in mounts and claims(triage) == {claim}, f"triage does not mount claim {claim} at /fleet")

    check(report.get("spec", {}).get("completionMode") in (None, "NonIndexed"), "the report Job is indexed")
    for c in pod(report).get("containers", []):
        check(gpus(c) == (None, None), f"report container {c.get('name')} asks for a GPU")
        check("hrr report /fleet/findings" in " ".join(c.get("args", [])), "the report reads no /fleet/findings")
    check(claims(report) == {claim}, f"the report does not mount claim {claim}")

    for p in problems:
        print(f"check failed: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("error: usage: check-manifests.py VOLUME.yaml TRIAGE.yaml REPORT.yaml", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
