//! Finding Lua workflows: `hrr <name>` runs `<name>.lua` from `scripts.path`,
//! the project's `.hrr/scripts/` (found by [`crate::config::Project`], so
//! never from inside an archive), the user's config dir `scripts/`, then the
//! scripts embedded in the binary (DESIGN §5).

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::config::Config;

/// The workflows shipped inside the binary: (name, file text). `triage` is
/// the preset `hrr triage` runs; `flaky` is the example workflow of the
/// README.
pub const EMBEDDED: &[(&str, &str)] = &[
    ("triage", include_str!("../../scripts/triage.lua")),
    ("flaky", include_str!("../../scripts/flaky.lua")),
];

/// The workflow embedded in the binary under `name`, whatever the scripts
/// directories hold: what `hrr triage --print-workflow` prints and what
/// `hrr.workflow.embedded` loads.
pub fn embedded(name: &str) -> Option<Workflow> {
    EMBEDDED
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(n, text)| Workflow {
            name: (*n).into(),
            source: ScriptSource::Embedded(text),
            shadows: Vec::new(),
        })
}

/// Where a workflow's text comes from.
#[derive(Clone, Debug)]
pub enum ScriptSource {
    /// A file on disk.
    File(PathBuf),
    /// A script embedded in the binary.
    Embedded(&'static str),
}

/// A Lua workflow that `hrr <name>` would run.
#[derive(Clone, Debug)]
pub struct Workflow {
    /// The command name (file stem).
    pub name: String,
    /// Where its text comes from.
    pub source: ScriptSource,
    /// Files of the same name further down the search order, which this one
    /// hides.
    pub shadows: Vec<PathBuf>,
}

impl Workflow {
    /// A workflow for an explicit file (`hrr run FILE`).
    pub fn from_file(path: &Path) -> Workflow {
        Workflow {
            name: path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            source: ScriptSource::File(path.to_path_buf()),
            shadows: Vec::new(),
        }
    }

    /// The chunk name Lua reports in errors: the file name, so messages read
    /// `triage.lua:42: …`.
    pub fn chunk_name(&self) -> String {
        match &self.source {
            ScriptSource::File(p) => {
                format!("@{}", p.file_name().unwrap_or_default().to_string_lossy())
            }
            ScriptSource::Embedded(_) => format!("@{}.lua", self.name),
        }
    }

    /// The script text.
    pub fn text(&self) -> anyhow::Result<String> {
        match &self.source {
            ScriptSource::File(p) => std::fs::read_to_string(p)
                .with_context(|| format!("cannot read Lua script {}", p.display())),
            ScriptSource::Embedded(text) => Ok((*text).to_string()),
        }
    }

    /// Where it comes from, for `hrr --list` (full path with `verbose`).
    pub fn origin(&self, verbose: bool) -> String {
        match &self.source {
            ScriptSource::Embedded(_) => "embedded in hrr".into(),
            ScriptSource::File(p) if verbose => p.display().to_string(),
            ScriptSource::File(p) => p
                .parent()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
        }
    }

    /// The help text: the script's leading `--` comment block.
    pub fn help(&self) -> String {
        let text = self.text().unwrap_or_default();
        let mut out = String::new();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("--") else {
                break;
            };
            out.push_str(rest.strip_prefix(' ').unwrap_or(rest));
            out.push('\n');
        }
        if out.is_empty() {
            out = format!(
                "{}: a Lua workflow ({}); it documents no help\n",
                self.name,
                self.origin(true)
            );
        }
        out
    }
}

/// The script directories, in search order.
pub fn dirs(config: &Config) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = config
        .strings("scripts.path")
        .into_iter()
        .map(PathBuf::from)
        .collect();
    if let Some(d) = config.project().scripts_dir() {
        dirs.push(d);
    }
    if let Some(user) = crate::config::user_dir() {
        dirs.push(user.join("scripts"));
    }
    dirs
}

/// The workflow `hrr <name>` would run, if any.
pub fn find(config: &Config, name: &str) -> Option<Workflow> {
    if name.is_empty() || name.contains(['/', '\\', '.']) {
        return None;
    }
    let mut files = dirs(config)
        .into_iter()
        .map(|d| d.join(format!("{name}.lua")))
        .filter(|p| p.is_file());
    let embedded = embedded(name);
    match files.next() {
        Some(first) => {
            let mut shadows: Vec<PathBuf> = files.collect();
            if embedded.is_some() {
                shadows.push(PathBuf::from("(the workflow embedded in hrr)"));
            }
            Some(Workflow {
                name: name.into(),
                source: ScriptSource::File(first),
                shadows,
            })
        }
        None => embedded,
    }
}

/// Every workflow visible from here, by name.
pub fn all(config: &Config) -> Vec<Workflow> {
    let mut names: Vec<String> = EMBEDDED.iter().map(|(n, _)| n.to_string()).collect();
    for dir in dirs(config) {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "lua") {
                if let Some(stem) = p.file_stem().and_then(|s| s.to_str()) {
                    names.push(stem.to_string());
                }
            }
        }
    }
    names.sort();
    names.dedup();
    names.iter().filter_map(|n| find(config, n)).collect()
}
