//! Reading the findings `hrr report` groups: finding files and the
//! directories that hold them, every read bounded.
//!
//! A file holds one finding (`hrr triage --format json`), a JSON list of
//! them (`hrr triage --all --format json`), or one per line (JSON Lines, as
//! `--format jsonl` streams them). A directory is searched for
//! `*.finding.json` and `*.jsonl` files, [`MAX_DEPTH`] levels down, without
//! following symlinks; `-` is stdin. A file that holds no finding is
//! skipped and said so; a named path that cannot be opened is an error.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use serde::Serialize;
use serde_json::Value;

use crate::finding::Finding;

/// The largest file read (a finding is kilobytes; a JSON Lines file of a
/// night's findings stays well below this).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// The most files read in one report.
pub const MAX_FILES: usize = 100_000;

/// The most findings read in one report (each is held until grouped).
pub const MAX_FINDINGS: usize = 100_000;

/// How many directory levels below a named directory are searched.
pub const MAX_DEPTH: usize = 8;

/// The most directory entries examined while searching.
pub const MAX_ENTRIES: usize = 1_000_000;

/// A file that was read but held no finding, a line of one that was not a
/// finding, or a directory below a named one that could not be listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Skipped {
    /// The file, as found.
    pub path: String,
    /// Why it was skipped.
    pub reason: String,
}

/// What [`load`] read.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The findings, in the order read.
    pub findings: Vec<Finding>,
    /// Files read (those skipped included).
    pub files: u64,
    /// Files and lines skipped, with why.
    pub skipped: Vec<Skipped>,
}

/// Reads the findings of `paths`: files as named, directories searched.
/// Errors when a path cannot be opened or a limit is passed, so a report
/// never silently leaves findings out.
pub fn load(paths: &[PathBuf]) -> anyhow::Result<Loaded> {
    let mut files = Vec::new();
    let mut loaded = Loaded::default();
    for path in paths {
        if path == Path::new("-") {
            files.push(path.clone());
            continue;
        }
        let meta = fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
        if meta.is_dir() {
            search(path, &mut files, &mut loaded.skipped)?;
        } else {
            files.push(path.clone());
        }
        if files.len() > MAX_FILES {
            bail!(
                "more than {MAX_FILES} finding files under {}; report on fewer paths at a time",
                path.display()
            );
        }
    }
    for file in &files {
        loaded.files += 1;
        read_file(file, &mut loaded);
        if loaded.findings.len() > MAX_FINDINGS {
            bail!(
                "more than {MAX_FINDINGS} findings (at {}); report on fewer files at a time",
                file.display()
            );
        }
    }
    Ok(loaded)
}

/// Whether a file found in a directory is one `hrr report` reads.
fn is_finding_file(name: &str) -> bool {
    name.ends_with(".finding.json") || name.ends_with(".jsonl")
}

/// The finding files under `dir`, byte-sorted level by level, appended to
/// `out`. Symlinks are neither followed nor read; a subdirectory that
/// cannot be listed is recorded in `skipped`.
fn search(dir: &Path, out: &mut Vec<PathBuf>, skipped: &mut Vec<Skipped>) -> anyhow::Result<()> {
    let mut pending = vec![(dir.to_path_buf(), 0usize)];
    let mut examined = 0usize;
    while let Some((at, depth)) = pending.pop() {
        let listing = match fs::read_dir(&at) {
            Ok(listing) => listing,
            Err(e) if depth == 0 => {
                return Err(e).with_context(|| format!("cannot list {}", at.display()))
            }
            Err(e) => {
                skipped.push(Skipped {
                    path: at.display().to_string(),
                    reason: format!("cannot list it: {e}"),
                });
                continue;
            }
        };
        let mut entries: Vec<fs::DirEntry> = listing.filter_map(Result::ok).collect();
        examined += entries.len();
        if examined > MAX_ENTRIES {
            bail!(
                "more than {MAX_ENTRIES} directory entries under {}; name the directories that hold the findings",
                dir.display()
            );
        }
        entries.sort_by_key(fs::DirEntry::file_name);
        let mut subdirs = Vec::new();
        for entry in entries {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() && depth < MAX_DEPTH {
                subdirs.push((entry.path(), depth + 1));
            } else if kind.is_file() && is_finding_file(&entry.file_name().to_string_lossy()) {
                out.push(entry.path());
                if out.len() > MAX_FILES {
                    bail!(
                        "more than {MAX_FILES} finding files under {}; report on fewer paths at a time",
                        dir.display()
                    );
                }
            }
        }
        // Popped last-first: reversed, so subdirectories are read in order.
        pending.extend(subdirs.into_iter().rev());
    }
    Ok(())
}

/// Reads one file's findings into `loaded`, or records why it holds none.
fn read_file(path: &Path, loaded: &mut Loaded) {
    let shown = path.display().to_string();
    let text = match crate::user_input::read_text(path, MAX_FILE_BYTES) {
        Ok(text) => text,
        Err(e) => return skip(loaded, shown, format!("cannot read it: {e:#}")),
    };
    let whole = serde_json::from_str::<Value>(&text);
    match whole {
        Ok(value) => match findings_of(value) {
            Ok(found) if found.is_empty() => skip(loaded, shown, "an empty list".into()),
            Ok(found) => loaded.findings.extend(found),
            Err(e) => skip(loaded, shown, format!("{e:#}")),
        },
        Err(_) if looks_like_json_lines(&text) => read_lines(&text, shown, loaded),
        Err(e) => skip(loaded, shown, format!("not JSON: {e}")),
    }
}

/// JSON Lines: the first non-empty line is a JSON object on its own.
fn looks_like_json_lines(text: &str) -> bool {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .and_then(|l| serde_json::from_str::<Value>(l).ok())
        .is_some_and(|v| v.is_object())
}

/// One finding per non-empty line; a line that is not one is skipped on its
/// own, so a stream cut off mid-line keeps its complete findings.
fn read_lines(text: &str, shown: String, loaded: &mut Loaded) {
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let finding = serde_json::from_str::<Value>(line)
            .map_err(anyhow::Error::from)
            .and_then(finding_of);
        match finding {
            Ok(f) => loaded.findings.push(f),
            Err(e) => skip(loaded, format!("{shown}:{}", i + 1), format!("{e:#}")),
        }
    }
}

/// The findings of a parsed file: one object, or a list of them.
fn findings_of(value: Value) -> anyhow::Result<Vec<Finding>> {
    match value {
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, v)| finding_of(v).with_context(|| format!("list item {i}")))
            .collect(),
        other => Ok(vec![finding_of(other)?]),
    }
}

/// A finding, known by its schema version and the two fields every finding
/// prints (which `hrr archive info --json`, also `schema_version` 1, lacks).
fn finding_of(value: Value) -> anyhow::Result<Finding> {
    if !value.is_object() {
        bail!("not a finding: not a JSON object");
    }
    for field in ["outcome", "fault_class"] {
        if value.get(field).is_none() {
            bail!("not a finding: no `{field}` field");
        }
    }
    Finding::from_value(value)
}

fn skip(loaded: &mut Loaded, path: String, reason: String) {
    loaded.skipped.push(Skipped { path, reason });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(archive: &str) -> String {
        let mut f = Finding::new(Some(archive.into()));
        f.outcome = crate::finding::Outcome::Maf;
        serde_json::to_string(&f).unwrap()
    }

    #[test]
    fn one_finding_a_list_and_json_lines_load() {
        let dir = tempfile::tempdir().unwrap();
        let one = dir.path().join("a.finding.json");
        fs::write(&one, finding("/c/pid-1")).unwrap();
        let list = dir.path().join("list.json");
        fs::write(
            &list,
            format!("[{}, {}]", finding("/c/pid-2"), finding("/c/pid-3")),
        )
        .unwrap();
        let lines = dir.path().join("night.jsonl");
        fs::write(
            &lines,
            format!(
                "{}\n\n{}\n{{\"schema_ver",
                finding("/d/pid-1"),
                finding("/d/pid-2")
            ),
        )
        .unwrap();
        let loaded = load(&[one, list, lines.clone()]).unwrap();
        assert_eq!(loaded.files, 3);
        assert_eq!(loaded.findings.len(), 5);
        assert_eq!(loaded.skipped.len(), 1, "the cut-off last line");
        assert_eq!(loaded.skipped[0].path, format!("{}:4", lines.display()));
    }

    #[test]
    fn other_json_is_skipped_with_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        let info = dir.path().join("info.json");
        fs::write(
            &info,
            r#"{"schema_version": 1, "kind": "process", "path": "/x"}"#,
        )
        .unwrap();
        let v2 = dir.path().join("v2.json");
        fs::write(
            &v2,
            finding("/x").replace("\"schema_version\":1", "\"schema_version\":2"),
        )
        .unwrap();
        let prose = dir.path().join("notes.txt");
        fs::write(&prose, "# notes\nnot json\n").unwrap();
        let loaded = load(&[info, v2, prose]).unwrap();
        assert!(loaded.findings.is_empty());
        let reasons: Vec<&str> = loaded.skipped.iter().map(|s| s.reason.as_str()).collect();
        assert!(reasons[0].contains("no `outcome` field"), "{reasons:?}");
        assert!(reasons[1].contains("schema_version 2"), "{reasons:?}");
        assert!(reasons[2].starts_with("not JSON"), "{reasons:?}");
    }

    #[cfg(unix)]
    #[test]
    fn directories_are_searched_by_name_to_a_depth_without_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let mut deep = dir.path().to_path_buf();
        for level in 0..=MAX_DEPTH {
            deep.push(format!("d{level}"));
        }
        fs::create_dir_all(&deep).unwrap();
        fs::write(deep.join("too-deep.finding.json"), finding("/deep")).unwrap();
        let shallow = dir.path().join("d0");
        fs::write(shallow.join("x.finding.json"), finding("/x")).unwrap();
        fs::write(shallow.join("x.finding.md"), "## not read").unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("o.finding.json"), finding("/o")).unwrap();
        std::os::unix::fs::symlink(outside.path(), shallow.join("link")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("o.finding.json"),
            shallow.join("l.finding.json"),
        )
        .unwrap();
        let loaded = load(&[dir.path().to_path_buf()]).unwrap();
        let archives: Vec<_> = loaded.findings.iter().map(|f| f.archive.clone()).collect();
        assert_eq!(archives, [Some("/x".to_string())]);
    }

    #[cfg(unix)]
    #[test]
    fn an_unlistable_subdirectory_is_skipped_and_said_so() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let locked = dir.path().join("locked");
        fs::create_dir(&locked).unwrap();
        fs::write(dir.path().join("a.finding.json"), finding("/a")).unwrap();
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
        // root lists it all the same: then there is nothing to skip
        let listable = fs::read_dir(&locked).is_ok();
        let loaded = load(&[dir.path().to_path_buf()]);
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
        let loaded = loaded.unwrap();
        assert_eq!(loaded.findings.len(), 1);
        let reasons: Vec<&str> = loaded.skipped.iter().map(|s| s.reason.as_str()).collect();
        match listable {
            true => assert!(reasons.is_empty(), "{reasons:?}"),
            false => assert!(
                reasons == ["cannot list it: Permission denied (os error 13)"],
                "{reasons:?}"
            ),
        }
    }

    #[test]
    fn a_missing_path_is_an_error() {
        let err = load(&[PathBuf::from("/nonexistent/findings")]).unwrap_err();
        assert!(format!("{err:#}").contains("cannot read /nonexistent/findings"));
    }
}
