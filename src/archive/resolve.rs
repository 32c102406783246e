//! Which process archive a path names: a `pid-*` directory, or a capture
//! root whose processes are listed with their states and one chosen for
//! triage (DESIGN §3).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use serde::Serialize;

use crate::archive::format::blobs::FileIndex;
use crate::archive::format::framing::{RecordReader, DEFAULT_CHUNK, EVENTS_MAGIC, FILE_HEADER_LEN};
use crate::archive::format::manifest::{self, ProcessState};
use crate::archive::summary::document::{
    ArchiveKind, ArchiveSummary, Problem, ProcessEntry, RootListing,
};
use crate::archive::summary::pass::summarize;

/// What a path given on the command line (or to `hrr.archive.resolve`)
/// designates: the Lua table of DESIGN §5.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArchiveRef {
    /// The process archive to work on (the chosen one for a root).
    pub path: String,
    /// The same directory as a path, exact where `path` is shown lossily
    /// (a name that is not UTF-8); not part of the table.
    #[serde(skip)]
    pub dir: PathBuf,
    /// The capture root, when the process lives in one (`pid-*` parent).
    pub root: Option<String>,
    /// A process archive when a `pid-*` directory was given, a root otherwise.
    pub kind: ArchiveKind,
    /// Every process archive of the root (just the one for a process path).
    pub processes: Vec<ProcessEntry>,
    /// Pid of the chosen process.
    pub chosen: u64,
    /// Why it was chosen.
    pub reason: String,
    /// `pid-*` directories without `events.bin` (never chosen).
    pub leftovers: Vec<String>,
    /// Refused entries (symlinked `pid-*`, unreadable directories).
    pub problems: Vec<Problem>,
}

/// The one process archive `path` names: a `pid-*` directory (or any
/// directory with `events.bin`), or a capture root holding exactly one
/// process. A root with several is an error naming them and the one triage
/// would pick, because choosing among them is `triage`'s job, not a
/// primitive's.
pub fn single_process(path: &Path) -> anyhow::Result<PathBuf> {
    let r = resolve(path)?;
    if r.kind == ArchiveKind::Process || r.processes.len() == 1 {
        return Ok(r.dir);
    }
    let names: Vec<String> = r
        .processes
        .iter()
        .map(|p| format!("pid-{}", p.pid))
        .collect();
    if names.is_empty() {
        anyhow::bail!(
            "{} holds no process capture (no events.bin, no pid-*/events.bin)",
            path.display()
        );
    }
    anyhow::bail!(
        "{} is a capture root with {} processes ({}); pass one pid-* directory, e.g. {} ({})",
        path.display(),
        names.len(),
        names.join(", "),
        r.path,
        r.reason
    )
}

/// What `archive info` reports for a path.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Info {
    /// One process archive (also a root holding exactly one process).
    Process(Box<ArchiveSummary>),
    /// A root with several processes: the process table.
    Root(RootListing),
}

/// Decodes a path for `archive info`: a process summary, or for a root with
/// several processes the process table.
pub fn info(path: &Path) -> anyhow::Result<Info> {
    info_by(path, summarize)
}

/// [`info`] with the process summarised by `summarize` (with or without
/// the allocation map).
pub fn info_by(
    path: &Path,
    summarize: fn(&Path) -> anyhow::Result<ArchiveSummary>,
) -> anyhow::Result<Info> {
    let dir = canonical_dir(path)?;
    if is_process_dir(&dir) {
        return Ok(Info::Process(Box::new(summarize(&dir)?)));
    }
    let listing = list_root(&dir)?;
    if listing.processes.len() == 1 {
        let only = listing.processes[0].dir.clone();
        let mut summary = summarize(&only)?;
        // The root's refused entries (a symlinked pid-*) stay visible.
        summary.problems.extend(listing.problems);
        return Ok(Info::Process(Box::new(summary)));
    }
    Ok(Info::Root(listing))
}

/// Resolves a process archive or a capture root (DESIGN §3): on a root,
/// lists every `pid-*`, refuses symlinked ones, sets aside leftovers without
/// `events.bin`, and chooses the process that died (several dead → most
/// events; none dead → most events).
pub fn resolve(path: &Path) -> anyhow::Result<ArchiveRef> {
    let dir = canonical_dir(path)?;
    if is_process_dir(&dir) {
        let entry = process_entry(&dir)?;
        let root = dir
            .parent()
            .filter(|_| dir_name(&dir).starts_with("pid-"))
            .map(|p| p.display().to_string());
        return Ok(ArchiveRef {
            path: entry.path.clone(),
            dir: entry.dir.clone(),
            root,
            kind: ArchiveKind::Process,
            chosen: entry.pid,
            reason: "a process archive (a directory holding events.bin) was given".into(),
            processes: vec![entry],
            leftovers: Vec::new(),
            problems: Vec::new(),
        });
    }
    let listing = list_root(&dir)?;
    let chosen = listing
        .chosen
        .and_then(|pid| listing.processes.iter().find(|p| p.pid == pid))
        .context("no process archive to choose")?;
    Ok(ArchiveRef {
        path: chosen.path.clone(),
        dir: chosen.dir.clone(),
        root: Some(listing.path.clone()),
        kind: ArchiveKind::Root,
        chosen: chosen.pid,
        reason: listing.reason.clone(),
        processes: listing.processes.clone(),
        leftovers: listing.leftovers,
        problems: listing.problems,
    })
}

fn canonical_dir(path: &Path) -> anyhow::Result<PathBuf> {
    let dir = dunce::canonicalize(path)
        .with_context(|| format!("cannot open archive {}", path.display()))?;
    if !dir.is_dir() {
        bail!(
            "{} is not a directory: give a capture root (something.hrr) or one of its pid-* directories",
            path.display()
        );
    }
    Ok(dir)
}

fn dir_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn is_process_dir(dir: &Path) -> bool {
    dir.join("events.bin").is_file()
}

/// Why `dir/events.bin` is there but cannot be read as the event stream
/// ("events.bin is a directory, not a file", "events.bin: Permission
/// denied"); `None` when it is simply absent or a readable file.
fn events_bin_trouble(dir: &Path) -> Option<String> {
    let events = dir.join("events.bin");
    match fs::metadata(&events) {
        Ok(m) if m.is_file() => None,
        Ok(_) => crate::user_input::FileKind::of(&events)
            .map(|kind| format!("events.bin is {}, not a file", kind.describe())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => Some(format!("events.bin: {e}")),
    }
}

/// Lists a capture root: its process archives (ascending pid), leftovers,
/// refused entries, and the process triage would choose.
pub fn list_root(root: &Path) -> anyhow::Result<RootListing> {
    let root = canonical_dir(root)?;
    if dir_name(&root).starts_with("pid-") {
        if let Some(trouble) = events_bin_trouble(&root) {
            bail!("{}/{trouble}", root.display());
        }
        bail!(
            "{} has no events.bin: the process created its directory but recorded nothing (an empty process archive); point hrr at a pid-* directory that holds events.bin, or at the capture root",
            root.display()
        );
    }
    let entries = fs::read_dir(&root).with_context(|| format!("cannot list {}", root.display()))?;
    let mut processes = Vec::new();
    let mut leftovers = Vec::new();
    let mut problems = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", root.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid_text) = name.strip_prefix("pid-") else {
            continue;
        };
        let path = entry.path();
        let kind = match fs::symlink_metadata(&path) {
            Ok(m) => m.file_type(),
            Err(e) => {
                problems.push(Problem::new("unreadable_entry", format!("{name}: {e}")));
                continue;
            }
        };
        if kind.is_symlink() {
            problems.push(Problem::new(
                "symlinked_process",
                format!("{name} is a symlink; refused and not followed (an archive's pid-* entries must be real directories)"),
            ));
            continue;
        }
        if !kind.is_dir() {
            continue;
        }
        if pid_text.parse::<u64>().is_err() {
            problems.push(Problem::new(
                "unrecognised_entry",
                format!("{name}: not a pid-<number> directory; ignored"),
            ));
            continue;
        }
        if !is_process_dir(&path) {
            match events_bin_trouble(&path) {
                Some(trouble) => problems.push(Problem::new(
                    "events_unreadable",
                    format!("{name}/{trouble}"),
                )),
                None => leftovers.push(path.display().to_string()),
            }
            continue;
        }
        processes.push(process_entry(&path)?);
    }
    processes.sort_by_key(|p| p.pid);
    leftovers.sort();
    if processes.is_empty() {
        let mut msg = format!(
            "{} holds no process archive (no pid-*/events.bin): is it a capture root (the HIP_HRR_CAPTURE_OUTPUT directory)?",
            root.display()
        );
        if !leftovers.is_empty() {
            msg.push_str(&format!(
                " {} pid-* directories hold no events.bin (nothing recorded)",
                leftovers.len()
            ));
        }
        if !problems.is_empty() {
            let why: Vec<&str> = problems.iter().map(|p| p.detail.as_str()).collect();
            msg.push_str(&format!(" Refused: {}", why.join("; ")));
        }
        bail!(msg);
    }
    let (chosen, reason) = choose(&processes);
    Ok(RootListing {
        schema_version: crate::archive::summary::document::SCHEMA_VERSION,
        kind: ArchiveKind::Root,
        path: root.display().to_string(),
        processes,
        chosen: Some(chosen),
        reason,
        leftovers,
        problems,
    })
}

fn process_entry(dir: &Path) -> anyhow::Result<ProcessEntry> {
    let manifest = manifest::read(dir);
    let state = manifest.process_state();
    let events_bin = dir.join("events.bin");
    let events_bin_bytes = fs::metadata(&events_bin)
        .with_context(|| format!("cannot read {}", events_bin.display()))?
        .len();
    let events = match (state, manifest.int("event_count")) {
        (ProcessState::Complete | ProcessState::Incomplete, Some(n)) => n,
        _ => count_events(&events_bin),
    };
    let pid = dir_name(dir)
        .strip_prefix("pid-")
        .and_then(|p| p.parse().ok())
        .or_else(|| manifest.int("pid"))
        .unwrap_or(0);
    Ok(ProcessEntry {
        pid,
        parent_pid: manifest.int("parent_pid"),
        state,
        events,
        blobs: FileIndex::count_blobs(dir),
        events_bin_bytes,
        path: dir.display().to_string(),
        dir: dir.to_path_buf(),
    })
}

/// Counts complete non-trailer records before any trailer (0 for a file
/// that is not a readable HRR stream).
fn count_events(events_bin: &Path) -> u64 {
    let Ok(mut f) = fs::File::open(events_bin) else {
        return 0;
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut head = [0u8; FILE_HEADER_LEN];
    if std::io::Read::read_exact(&mut f, &mut head).is_err() || head[0..4] != EVENTS_MAGIC {
        return 0;
    }
    let mut reader = RecordReader::new(
        f,
        FILE_HEADER_LEN as u64,
        len - FILE_HEADER_LEN as u64,
        DEFAULT_CHUNK,
    );
    let mut n = 0;
    while let Ok(Some(rec)) = reader.next_record() {
        if rec.trailer_count().is_some() {
            break;
        }
        n += 1;
    }
    n
}

fn pid_list(pids: impl Iterator<Item = u64>) -> String {
    pids.map(|p| p.to_string()).collect::<Vec<_>>().join(", ")
}

/// DESIGN §3: the process that died; several dead → most events; none dead →
/// most events (ties: lowest pid). The size of `events.bin` is never the rule.
fn choose(processes: &[ProcessEntry]) -> (u64, String) {
    let most_events = |set: &[&ProcessEntry]| -> ProcessEntry {
        let mut best = set[0];
        for p in set {
            if p.events > best.events {
                best = p;
            }
        }
        best.clone()
    };
    if let [only] = processes {
        return (
            only.pid,
            format!("pid {} is the only process archive in the root", only.pid),
        );
    }
    let dead: Vec<&ProcessEntry> = processes.iter().filter(|p| p.state.died()).collect();
    let all: Vec<&ProcessEntry> = processes.iter().collect();
    let others = |pid: u64| pid_list(processes.iter().map(|p| p.pid).filter(|&p| p != pid));
    match dead.len() {
        1 => {
            let p = dead[0];
            (
                p.pid,
                format!(
                    "pid {} is the only process that died ({}); the others ({}) did not",
                    p.pid,
                    died_how(p.state),
                    others(p.pid)
                ),
            )
        }
        0 => {
            let p = most_events(&all);
            (
                p.pid,
                format!(
                    "no process died; pid {} has the most events ({}) of {} processes (others: {})",
                    p.pid,
                    p.events,
                    processes.len(),
                    others(p.pid)
                ),
            )
        }
        n => {
            let p = most_events(&dead);
            (
                p.pid,
                format!(
                    "{n} processes died ({}); pid {} ({}) has the most events ({}) among them",
                    pid_list(dead.iter().map(|d| d.pid)),
                    p.pid,
                    died_how(p.state),
                    p.events
                ),
            )
        }
    }
}

fn died_how(state: ProcessState) -> &'static str {
    match state {
        ProcessState::Incomplete => "manifest complete: false",
        ProcessState::NotFinalized => "no manifest: killed hard",
        _ => "ended cleanly",
    }
}
