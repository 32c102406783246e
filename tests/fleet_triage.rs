//! `hrr triage` over many archives: the list it expands to, `--shard`,
//! `--format jsonl` when some archives cannot be triaged, `-o DIR`, and
//! `--gpus` replaying with the test player, one replay per GPU at a time,
//! the player located once for every worker.
#![cfg(unix)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Output;

use common::{script, stderr, stdout, test_player, Sandbox};
use hrr_testkit::archive::write_root_manifest;
use hrr_testkit::synth::crashed_process;
use serde_json::Value;

/// Writes a capture root at `root` holding the synthetic crashed process
/// (pid 4243), as the capture library lays it out.
fn capture_root(root: &Path) -> PathBuf {
    let crashed = crashed_process();
    crashed.write(root).unwrap();
    write_root_manifest(root, &[&crashed]).unwrap();
    root.join("pid-4243")
}

/// Writes `empty.hrr` in `sb`: a capture root whose only process
/// directory has no event stream, so it cannot be triaged.
fn empty_root(sb: &Sandbox) {
    std::fs::create_dir_all(sb.path().join("empty.hrr/pid-77")).unwrap();
    sb.write("empty.hrr/manifest.json", "{\"pids\": [77]}");
}

/// The findings of `--format jsonl` output: one JSON object per line.
fn lines(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|l| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("a jsonl line ({e}): {l}\nstderr: {}", stderr(out)))
        })
        .collect()
}

/// The `archive` field of each finding, under `base` (resolved).
fn archives(findings: &[Value], base: &Path) -> BTreeSet<String> {
    let base = base.canonicalize().unwrap();
    findings
        .iter()
        .map(|f| {
            let a = Path::new(f["archive"].as_str().unwrap());
            a.strip_prefix(&base).unwrap_or(a).display().to_string()
        })
        .collect()
}

#[test]
fn shards_split_the_archives_so_that_each_is_triaged_by_exactly_one_task() {
    let sb = Sandbox::new();
    let nightly = sb.path().join("nightly");
    let mut all = BTreeSet::new();
    for i in 0..7 {
        capture_root(&nightly.join(format!("run{i}/capture.hrr")));
        all.insert(format!("run{i}/capture.hrr/pid-4243"));
    }
    let mut seen: Vec<String> = Vec::new();
    for k in 0..3 {
        let out = sb
            .hrr()
            .args(["triage", "nightly", "--no-replay", "--format", "jsonl"])
            .args(["--shard", &format!("{k}/3")])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let found = lines(&out);
        assert_eq!(found.len(), [3, 2, 2][k], "shard {k}/3: {}", stdout(&out));
        seen.extend(archives(&found, &nightly));
    }
    assert_eq!(seen.len(), all.len(), "no archive in two shards: {seen:?}");
    assert_eq!(seen.into_iter().collect::<BTreeSet<_>>(), all);
    // Bad K/N is one error line; a shard with nothing in it is fine.
    for bad in ["3/3", "0/0", "x/2"] {
        let out = sb
            .hrr()
            .args(["triage", "nightly", "--no-replay", "--shard", bad])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{bad}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("error: --shard"), "{err}");
        assert!(out.stdout.is_empty());
    }
    let out = sb
        .hrr()
        .args([
            "triage",
            "nightly/run3/capture.hrr",
            "--no-replay",
            "--shard",
            "5/6",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    assert!(
        stderr(&out).contains("shard 5/6 of 1 archives is empty"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_directory_is_searched_four_levels_deep_without_following_symlinks() {
    let sb = Sandbox::new();
    let d = sb.path().join("data");
    capture_root(&d.join("a/capture.hrr"));
    capture_root(&d.join("b/c/d/capture.hrr")); // four levels below data
    capture_root(&d.join("b/c/d/e/capture.hrr")); // five: not searched
    capture_root(&sb.path().join("elsewhere/linked.hrr"));
    std::os::unix::fs::symlink(sb.path().join("elsewhere"), d.join("link")).unwrap();
    let loose = capture_root(&sb.path().join("loose.hrr"));
    let list = sb.write(
        "list.txt",
        &format!(
            "# tonight\n\n{}\n{}\n",
            loose.display(),
            d.join("a/capture.hrr").display()
        ),
    );
    let out = sb
        .hrr()
        .args(["triage", "data", "--from"])
        .arg(&list)
        .args(["--no-replay", "--format", "jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let found = lines(&out);
    // data/a/capture.hrr is both searched for and listed: triaged once.
    assert_eq!(
        archives(&found, sb.path()),
        [
            "data/a/capture.hrr/pid-4243",
            "data/b/c/d/capture.hrr/pid-4243",
            "loose.hrr/pid-4243",
        ]
        .map(String::from)
        .into()
    );
    assert_eq!(found.len(), 3, "{}", stdout(&out));
    // The same list from stdin.
    let out = sb
        .hrr()
        .args(["triage", "--from", "-", "--no-replay", "--format", "jsonl"])
        .write_stdin(std::fs::read(&list).unwrap())
        .output()
        .unwrap();
    assert_eq!(lines(&out).len(), 2, "{}", stderr(&out));
}

#[test]
fn jsonl_gives_every_archive_a_line_even_when_some_cannot_be_triaged() {
    let sb = Sandbox::new();
    capture_root(&sb.path().join("good1.hrr"));
    capture_root(&sb.path().join("good2.hrr"));
    empty_root(&sb);
    let out = sb
        .hrr()
        .args([
            "triage",
            "good1.hrr",
            "empty.hrr",
            "missing.hrr",
            "good2.hrr",
        ])
        .args(["--no-replay", "--format", "jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let found = lines(&out);
    assert_eq!(found.len(), 4, "{}", stdout(&out));
    let by_archive: BTreeMap<String, &Value> = found
        .iter()
        .map(|f| (f["archive"].as_str().unwrap().to_string(), f))
        .collect();
    let root = sb.path().canonicalize().unwrap();
    for bad in ["empty.hrr", "missing.hrr"] {
        let f = by_archive[&root.join(bad).display().to_string()];
        assert_eq!(f["outcome"], "UNKNOWN");
        let error = f["error"].as_str().unwrap_or_else(|| panic!("{bad}: {f}"));
        assert!(error.contains(bad), "{bad}: {error}");
        assert!(f["kernel_name"].is_null());
    }
    for good in ["good1.hrr/pid-4243", "good2.hrr/pid-4243"] {
        let f = by_archive[&root.join(good).display().to_string()];
        assert_eq!(f["fault_class"], "metadata_only");
        assert!(f["error"].is_null());
    }
    // --exit-code: the highest outcome code (UNKNOWN 14 over metadata-only 15).
    let out = sb
        .hrr()
        .args([
            "triage",
            "good1.hrr",
            "missing.hrr",
            "--no-replay",
            "--exit-code",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(15), "{}", stderr(&out));
    // Markdown names the error; the summary table lists both.
    let md = stdout(&out);
    assert!(md.contains("**Error** — archive not found"), "{md}");
    assert!(md.contains("| process | outcome |"), "{md}");
}

#[test]
fn o_dir_gets_one_file_per_process_distinct_for_roots_of_the_same_name() {
    let sb = Sandbox::new();
    let a = capture_root(&sb.path().join("a/capture.hrr"));
    let b = capture_root(&sb.path().join("b/capture.hrr"));
    let out = sb
        .hrr()
        .args([
            "triage",
            "a/capture.hrr",
            "b/capture.hrr",
            "--no-replay",
            "-o",
            "out",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut files: Vec<PathBuf> = std::fs::read_dir(sb.path().join("out"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2, "{files:?}");
    let mut about = BTreeSet::new();
    for file in &files {
        let name = file.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("capture.hrr-") && name.ends_with("-pid-4243.finding.json"),
            "{name}"
        );
        let f: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        about.insert(PathBuf::from(f["archive"].as_str().unwrap()));
    }
    let expected: BTreeSet<PathBuf> = [a, b].iter().map(|p| p.canonicalize().unwrap()).collect();
    assert_eq!(about, expected);
    // --all, with a root that cannot be resolved into processes: that
    // root's finding is named without a pid, the good root's per process.
    empty_root(&sb);
    let out = sb
        .hrr()
        .args([
            "triage",
            "a/capture.hrr",
            "empty.hrr",
            "--all",
            "--no-replay",
        ])
        .args(["-o", "all"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut names: Vec<String> = std::fs::read_dir(sb.path().join("all"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names[0].starts_with("capture.hrr-") && names[0].ends_with("-pid-4243.finding.json"),
        "{names:?}"
    );
    let stem = names[1]
        .strip_prefix("empty.hrr-")
        .and_then(|n| n.strip_suffix(".finding.json"))
        .unwrap_or_else(|| panic!("{names:?}"));
    assert!(
        stem.len() == 12 && stem.chars().all(|c| c.is_ascii_hexdigit()),
        "{names:?}"
    );
    let f: Value =
        serde_json::from_slice(&std::fs::read(sb.path().join("all").join(&names[1])).unwrap())
            .unwrap();
    assert_eq!(f["outcome"], "UNKNOWN", "{f}");
    assert!(f["error"].as_str().is_some_and(|e| !e.is_empty()), "{f}");
    // One archive: -o keeps naming a file.
    let out = sb
        .hrr()
        .args([
            "triage",
            "a/capture.hrr",
            "--no-replay",
            "--shard",
            "0/1",
            "--format",
            "json",
        ])
        .args(["-o", "one.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read(sb.path().join("one.json")).unwrap(),
        out.stdout
    );
}

#[test]
fn a_run_refused_by_its_replay_plan_leaves_no_o_dir_and_no_workdir() {
    let sb = Sandbox::new();
    capture_root(&sb.path().join("a/capture.hrr"));
    capture_root(&sb.path().join("b/capture.hrr"));
    let no_gpu = format!("replay.kfd={}", sb.path().join("no-kfd").display());
    let refusals: [(&[&str], &str); 2] = [
        (
            &["-c", &no_gpu, "triage", "--replay", "native"],
            "error: no GPU device: ",
        ),
        (
            &["triage", "--replay", "docker"],
            "error: docker replay needs an image: pass --image IMG or set docker.image",
        ),
    ];
    for (flags, error) in refusals {
        let out = sb
            .hrr()
            .args(flags)
            .args(["a/capture.hrr", "b/capture.hrr", "-o", "out"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let err = stderr(&out);
        let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{err}");
        assert!(errors[0].starts_with(error), "{err}");
        assert!(!sb.path().join("out").exists(), "{flags:?} left -o out");
        assert!(
            !sb.path().join("work").exists(),
            "{flags:?} left the workdir"
        );
        assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    }
}

/// A host with four GPUs for the replays: a readable stand-in for
/// /dev/kfd, a ROCm tree matching the capture's HIP runtime, a rocm-smi
/// listing four gfx942 GPUs, and the test player behind a wrapper that logs
/// each run (its arguments, HIP_VISIBLE_DEVICES, start and end in ns).
struct GpuHost {
    sb: Sandbox,
    log: PathBuf,
}

impl GpuHost {
    fn new() -> GpuHost {
        let sb = Sandbox::new();
        sb.write("kfd", "");
        sb.write("rocm/lib/libamdhip64.so.7.2.53211", "");
        let bin = sb.path().join("bin");
        let gpus: String = (0..4)
            .map(|i| format!("GPU[{i}]\\t\\t: Card series: Instinct MI300X\\nGPU[{i}]\\t\\t: GFX Version: gfx942\\n"))
            .collect();
        script(&bin, "rocm-smi", &format!("#!/bin/sh\nprintf '{gpus}'\n"));
        let log = sb.path().join("player.log");
        script(
            &bin,
            "hrr-playback",
            &format!(
                "#!/bin/sh\necho $$ >> \"{}\"\nstart=$(date +%s%N)\ncase \"$*\" in *--version*|*--info*) ;; *) sleep 0.3 ;; esac\n\"{}\" \"$@\"\nrc=$?\necho \"$start $(date +%s%N) gpu=${{HIP_VISIBLE_DEVICES:-}} $*\" >> \"{}\"\nexit $rc\n",
                sb.path().join("pids").display(),
                test_player().display(),
                log.display()
            ),
        );
        GpuHost { sb, log }
    }

    /// The sandboxed `hrr` on this host, as a plain command (for tests
    /// that signal it).
    fn process(&self) -> std::process::Command {
        let mut cmd = self.sb.hrr_process();
        let at = |rel: &str| self.sb.path().join(rel).display().to_string();
        cmd.env("PATH", format!("{}:/usr/bin:/bin", at("bin")))
            .args(["-c", &format!("replay.kfd={}", at("kfd"))])
            .args(["-c", &format!("rocm.path={}", at("rocm"))]);
        cmd
    }

    fn hrr(&self) -> assert_cmd::Command {
        assert_cmd::Command::from_std(self.process())
    }

    /// (start, end, HIP_VISIBLE_DEVICES, args) of each logged player run.
    fn runs(&self) -> Vec<(u128, u128, String, String)> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let mut w = l.splitn(4, ' ');
                let start = w.next().unwrap().parse().unwrap();
                let end = w.next().unwrap().parse().unwrap();
                let gpu = w.next().unwrap().trim_start_matches("gpu=").to_string();
                (start, end, gpu, w.next().unwrap_or_default().to_string())
            })
            .collect()
    }
}

#[test]
fn gpus_run_one_replay_per_gpu_at_a_time_within_the_device_masks() {
    let host = GpuHost::new();
    for i in 0..6 {
        capture_root(&host.sb.path().join(format!("n/run{i}/capture.hrr")));
    }
    // The job was given host GPUs 2 and 3: --gpus 0,1 means those two.
    let out = host
        .hrr()
        .env("HIP_VISIBLE_DEVICES", "2,3")
        .args(["-c", "playback.path=hrr-playback"])
        .args(["triage", "n", "--gpus", "0,1", "--format", "jsonl", "--yes"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let found = lines(&out);
    assert_eq!(found.len(), 6);
    for f in &found {
        assert_eq!(f["outcome"], "PASS", "{f}");
        let gpu = f["replay"]["gpu"].as_u64();
        assert!(gpu == Some(2) || gpu == Some(3), "{f}");
    }
    let replays: Vec<_> = host
        .runs()
        .into_iter()
        .filter(|r| !r.3.contains("--version") && !r.3.contains("--info"))
        .collect();
    assert_eq!(replays.len(), 6, "{replays:?}");
    for (i, a) in replays.iter().enumerate() {
        assert!(
            a.2 == "2" || a.2 == "3",
            "replay on HIP_VISIBLE_DEVICES={}",
            a.2
        );
        for b in &replays[i + 1..] {
            if a.2 == b.2 {
                assert!(
                    a.1 <= b.0 || b.1 <= a.0,
                    "two replays overlapped on GPU {}: {a:?} {b:?}",
                    a.2
                );
            }
        }
    }
    let used: BTreeSet<&str> = replays.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(used, ["2", "3"].into(), "both GPUs were used");
    // A GPU outside the masks is refused before anything runs.
    let out = host
        .hrr()
        .env("HIP_VISIBLE_DEVICES", "2,3")
        .args(["triage", "n", "--gpus", "0,2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("error: --gpus 0,2: GPU 2 is not visible"),
        "{}",
        stderr(&out)
    );
    // Slurm without device cgroups, granting host GPU 2, sets both masks to
    // 2: the runtimes see no GPU, and hrr says why and what to change.
    let slurm = |cmd: &mut assert_cmd::Command| {
        cmd.env("ROCR_VISIBLE_DEVICES", "2")
            .env("CUDA_VISIBLE_DEVICES", "2")
            .env_remove("HIP_VISIBLE_DEVICES");
    };
    let why = "CUDA_VISIBLE_DEVICES=2 counts within the 1 GPU(s) ROCR_VISIBLE_DEVICES=2 leaves \
               (HIP applies it after ROCr), so its entry 2 names none of them; when both hold host \
               GPU indices (Slurm without device cgroups sets both), unset CUDA_VISIBLE_DEVICES \
               and keep ROCR_VISIBLE_DEVICES";
    let mut cmd = host.hrr();
    slurm(&mut cmd);
    let out = cmd.args(["triage", "n", "--gpus", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        stderr(&out).trim_end(),
        format!("error: --gpus 0: no GPU is visible to the replay with ROCR_VISIBLE_DEVICES=2 CUDA_VISIBLE_DEVICES=2; {why}")
    );
    let mut cmd = host.hrr();
    slurm(&mut cmd);
    let out = cmd
        .args(["triage", "n/run0/capture.hrr", "--format", "json"])
        .output()
        .unwrap();
    let f: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&out), stderr(&out)));
    let blocks = f["preflight"]["blocks"].as_array().unwrap();
    assert!(
        blocks.iter().any(|b| b.as_str() == Some(&format!(
            "the replay environment exposes no GPU within ROCR_VISIBLE_DEVICES=2 CUDA_VISIBLE_DEVICES=2: {why}"
        ))),
        "{blocks:?}"
    );
}

#[test]
fn the_player_is_located_once_for_every_worker() {
    let host = GpuHost::new();
    for i in 0..3 {
        capture_root(&host.sb.path().join(format!("n/run{i}/capture.hrr")));
    }
    // HRR_PLAYBACK is unset (the sandbox clears it): found on PATH.
    let out = host
        .hrr()
        .args(["triage", "n", "--format", "jsonl", "--yes"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(lines(&out).len(), 3);
    let versions = host
        .runs()
        .iter()
        .filter(|r| r.3.contains("--version"))
        .count();
    assert_eq!(
        versions,
        1,
        "the player was located once: {:?}",
        host.runs()
    );
}

/// Live (not zombie) processes of the process group `pgid`.
fn group_alive(pgid: i32) -> Vec<i32> {
    common::processes()
        .into_iter()
        .filter(|&(_, _, g, state)| g == pgid && state != 'Z')
        .map(|(p, ..)| p)
        .collect()
}

/// The replay logs under `dir`, at any depth, with their text.
fn replay_logs(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                dirs.push(path);
            } else if name.starts_with("hrr-replay-") && name.ends_with(".log") {
                let text = std::fs::read_to_string(&path).unwrap();
                found.push((path, text));
            }
        }
    }
    found
}

/// On Ctrl-C each worker's replay ends as a single run's does (the marker
/// in its log, its finding UNKNOWN with the interrupt), and hrr exits 130;
/// on SIGKILL the workers and replays die with hrr all the same.
#[test]
fn workers_and_their_replays_end_with_hrr_on_ctrl_c_and_on_sigkill() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    use std::time::{Duration, Instant};
    for signal in [Signal::SIGINT, Signal::SIGKILL] {
        let host = GpuHost::new();
        // Three archives on two GPUs: the third waits for a GPU.
        for i in 0..3 {
            capture_root(&host.sb.path().join(format!("n/run{i}/capture.hrr")));
        }
        let out_file = host.sb.path().join("out.jsonl");
        let mut cmd = host.process();
        cmd.env("HRR_TEST_SCENARIO", "hang")
            .args(["triage", "n", "--gpus", "0,1", "--yes", "--timeout", "5m"])
            .args(["--format", "jsonl"])
            .stdout(std::fs::File::create(&out_file).unwrap())
            .stderr(std::process::Stdio::null());
        let mut hrr = common::default_signals(&mut cmd).spawn().unwrap();
        // Both replays started: the located player's --version, then two more.
        let pids = host.sb.path().join("pids");
        let until = Instant::now() + Duration::from_secs(60);
        let started = loop {
            let text = std::fs::read_to_string(&pids).unwrap_or_default();
            let list: Vec<i32> = text.lines().filter_map(|l| l.parse().ok()).collect();
            if list.len() >= 3 {
                break list[1..].to_vec();
            }
            assert!(
                Instant::now() < until,
                "the replays did not start: {list:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        std::thread::sleep(Duration::from_millis(300));
        for &g in &started {
            assert!(
                !group_alive(g).is_empty(),
                "replay {g} is hanging before the kill"
            );
        }
        let signalled = Instant::now();
        kill(Pid::from_raw(hrr.id() as i32), signal).unwrap();
        let status = hrr.wait().unwrap();
        let until = Instant::now() + Duration::from_secs(10);
        let mut left: Vec<i32> = started.iter().flat_map(|&g| group_alive(g)).collect();
        while !left.is_empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
            left = started.iter().flat_map(|&g| group_alive(g)).collect();
        }
        assert_eq!(
            left,
            Vec::<i32>::new(),
            "after {signal}, these outlived hrr"
        );
        if signal != Signal::SIGINT {
            continue;
        }
        assert_eq!(status.code(), Some(130), "hrr exits 128 + SIGINT");
        assert!(
            signalled.elapsed() < Duration::from_secs(30),
            "the workers ended within their grace"
        );
        let text = std::fs::read_to_string(&out_file).unwrap();
        let found: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(found.len(), 3, "every archive still has a finding: {text}");
        let logs = replay_logs(&host.sb.path().join("work"));
        let mut interrupted = 0;
        for f in &found {
            assert_eq!(f["outcome"], "UNKNOWN", "{f}\n{logs:?}");
            let error = f["error"].as_str().unwrap_or_default();
            if error
                .contains("replay interrupted by signal 2: the player's process group was stopped")
            {
                interrupted += 1;
            } else {
                assert_eq!(
                    error,
                    "not triaged: hrr was interrupted by signal 2 before this archive's turn",
                    "{f}"
                );
            }
        }
        assert_eq!(interrupted, 2, "{text}");
        assert_eq!(logs.len(), 2, "{logs:?}");
        for (path, log) in &logs {
            assert!(
                log.lines()
                    .any(|l| l == "[hrr] replay interrupted: hrr received signal 2"),
                "{}: {log}",
                path.display()
            );
        }
    }
}

#[test]
fn a_worker_that_fails_mid_triage_is_an_unknown_finding_with_its_error() {
    let sb = Sandbox::new();
    capture_root(&sb.path().join("good.hrr"));
    capture_root(&sb.path().join("bad.hrr"));
    // A site workflow whose per-process step fails on one archive: that
    // worker prints an error and no finding.
    sb.write(
        "xdg/hrr/scripts/triage.lua",
        "local t = hrr.workflow.embedded(\"triage\")\nlocal one = t.triage_one\n\
         t.triage_one = function(process, opts)\n  \
         if process:find(\"bad.hrr\", 1, true) then error(\"site step failed\") end\n  \
         return one(process, opts)\nend\nreturn t\n",
    );
    let out = sb
        .hrr()
        .args([
            "triage",
            "good.hrr",
            "bad.hrr",
            "--no-replay",
            "--format",
            "jsonl",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let found = lines(&out);
    assert_eq!(found.len(), 2, "{}", stdout(&out));
    let bad = found
        .iter()
        .find(|f| f["archive"].as_str().unwrap().ends_with("bad.hrr"))
        .unwrap_or_else(|| panic!("{found:?}"));
    assert_eq!(bad["outcome"], "UNKNOWN");
    assert!(
        bad["error"].as_str().unwrap().contains("site step failed"),
        "{bad}"
    );
    let good = found
        .iter()
        .find(|f| {
            f["archive"]
                .as_str()
                .unwrap()
                .ends_with("good.hrr/pid-4243")
        })
        .unwrap_or_else(|| panic!("{found:?}"));
    assert!(good["error"].is_null());
}
