//! `hrr config show | path | get | init`.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{anyhow, bail, Context as _};

use crate::cli::ConfigCmd;
use crate::config::{self, schema, Config, DEFAULT_TOML};
use crate::context::Context;

/// Runs one `config` subcommand.
pub fn run(ctx: &Context, cmd: &ConfigCmd) -> anyhow::Result<i32> {
    match cmd {
        ConfigCmd::Show { origin } => {
            crate::ui::print(show(&ctx.config, *origin))?;
            Ok(0)
        }
        ConfigCmd::Path => {
            for f in ctx.config.files() {
                let state = if f.exists { "exists" } else { "missing" };
                crate::ui::print(format!(
                    "{:<9} {:<8} {}\n",
                    format!("{:?}", f.role).to_lowercase(),
                    state,
                    f.path.display()
                ))?;
            }
            for s in &ctx.config.project().skipped {
                let line = format!("{} ({})", s.dir.display(), s.why);
                crate::ui::print(format!(
                    "{:<9} {:<8} {}\n",
                    "project",
                    "skipped",
                    crate::error::single_line(&line)
                ))?;
            }
            Ok(0)
        }
        ConfigCmd::Get { key } => get(&ctx.config, key),
        ConfigCmd::Init {
            scripts: true,
            project,
            ..
        } => {
            let path = scripts_target(*project)?;
            let workflow = crate::lua::scripts::embedded("triage")
                .ok_or_else(|| anyhow!("the triage workflow is missing from this build of hrr"))?;
            write_new(&path, &workflow.text()?)?;
            ctx.ui.status(&format!("wrote {}", path.display()));
            Ok(0)
        }
        ConfigCmd::Init { site, project, .. } => {
            let path = init_target(*site, *project)?;
            write_new(&path, &starter_text())?;
            ctx.ui.status(&format!("wrote {}", path.display()));
            Ok(0)
        }
    }
}

/// The effective config as TOML, grouped by section; with `origin`, each key
/// is followed by a comment naming where its value came from. Unset keys are
/// listed as comments so every key is visible.
pub fn show(config: &Config, origin: bool) -> String {
    let mut out = String::new();
    if let Some(p) = config.profile() {
        let _ = writeln!(out, "# profile: {p}");
    }
    let mut section = "";
    for spec in schema::KEYS {
        let (sec, name) = spec.key.split_once('.').expect("dotted key");
        if sec != section {
            let _ = writeln!(out, "{}[{sec}]", if section.is_empty() { "" } else { "\n" });
            section = sec;
        }
        match config.entry(spec.key) {
            Some(e) if origin => {
                let _ = writeln!(out, "{name} = {}  # {}", e.value, e.origin);
            }
            Some(e) => {
                let _ = writeln!(out, "{name} = {}", e.value);
            }
            None => {
                let _ = writeln!(out, "# {name} is unset");
            }
        }
    }
    let aliases = config.aliases();
    if !aliases.is_empty() {
        out.push_str("\n[alias]\n");
        for (name, expansion) in aliases {
            let value = toml::Value::String(expansion);
            match config.entry(&format!("alias.{name}")) {
                Some(e) if origin => {
                    let _ = writeln!(out, "{name} = {value}  # {}", e.origin);
                }
                _ => {
                    let _ = writeln!(out, "{name} = {value}");
                }
            }
        }
    }
    out
}

fn get(config: &Config, key: &str) -> anyhow::Result<i32> {
    if key == "output.workdir" {
        crate::ui::print(format!(
            "{}\n",
            crate::workdir::configured(config).display()
        ))?;
        return Ok(0);
    }
    if schema::spec(key).is_none()
        && !key.starts_with(schema::ALIAS_PREFIX)
        && key != schema::PROFILE_KEY
    {
        let hint = crate::suggest::closest(key, schema::KEYS.iter().map(|k| k.key))
            .map(|s| format!("; did you mean '{s}'?"))
            .unwrap_or_default();
        bail!("unknown key '{key}'{hint}");
    }
    match config.get(key) {
        Some(toml::Value::String(s)) => crate::ui::print(format!("{s}\n"))?,
        Some(v) => crate::ui::print(format!("{v}\n"))?,
        None => return Err(anyhow!("'{key}' is not set")),
    }
    Ok(0)
}

fn init_target(site: bool, project: bool) -> anyhow::Result<PathBuf> {
    if site {
        let env = |n: &str| std::env::var(n).ok();
        return Ok(config::site_file(&env));
    }
    if project {
        return Ok(std::env::current_dir()?.join(".hrr").join("config.toml"));
    }
    config::user_dir()
        .map(|d| d.join("config.toml"))
        .ok_or_else(|| anyhow!("cannot tell where the user config dir is (no home directory)"))
}

/// Where `config init --scripts` writes `triage.lua`: the project's
/// `.hrr/scripts/` in the current directory with `--project`, else the
/// user's config dir `scripts/` (the directories `hrr triage` searches).
fn scripts_target(project: bool) -> anyhow::Result<PathBuf> {
    if project {
        return Ok(std::env::current_dir()?
            .join(".hrr")
            .join("scripts")
            .join("triage.lua"));
    }
    config::user_dir()
        .map(|d| d.join("scripts").join("triage.lua"))
        .ok_or_else(|| anyhow!("cannot tell where the user config dir is (no home directory)"))
}

/// Writes a starter file (a config, or the embedded `triage.lua`). Refuses
/// to overwrite anything already at `path`, even a dangling symlink, and to
/// write inside a capture archive.
fn write_new(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    crate::safety::ensure_not_in_archive(path)?;
    if path.symlink_metadata().is_ok() {
        bail!(
            "{} already exists; edit it, or remove it first",
            path.display()
        );
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    std::io::Write::write_all(&mut file, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// The default config with every active line commented out.
pub fn starter_text() -> String {
    let mut out = String::from("# hrr config: uncomment and edit what you need.\n");
    for line in DEFAULT_TOML.lines().skip_while(|l| l.starts_with('#')) {
        let t = line.trim_start();
        if t.is_empty() || t.starts_with('#') {
            out.push_str(line);
        } else {
            out.push_str("# ");
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starter_changes_nothing_and_show_round_trips() {
        assert!(crate::config::schema::KEYS.len() > 20);
        let parsed = toml::from_str::<toml::Table>(&starter_text()).unwrap();
        assert!(parsed.is_empty(), "starter must set nothing: {parsed:?}");
        let c = Config::with_overrides(&["replay.gpu=2"]).unwrap();
        let shown = show(&c, false);
        let t: toml::Table = toml::from_str(&shown).unwrap();
        assert_eq!(t["replay"]["gpu"].as_integer(), Some(2));
        assert!(shown.contains("# path is unset"));
        assert!(show(&c, true).contains("gpu = 2  # flag -c replay.gpu=2"));
    }
}
