//! `hrr config show | path | get | init`.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context as _};

use crate::cli::ConfigCmd;
use hrr::config::{self, schema, Config};
use hrr::context::Context;

/// Runs one `config` subcommand.
pub fn run(ctx: &Context, cmd: &ConfigCmd) -> anyhow::Result<i32> {
    match cmd {
        ConfigCmd::Show { origin } => {
            hrr::ui::print(ctx.config.listing(*origin))?;
            Ok(0)
        }
        ConfigCmd::Path => {
            for f in ctx.config.files() {
                let state = if f.exists { "exists" } else { "missing" };
                hrr::ui::print(format!(
                    "{:<9} {:<8} {}\n",
                    format!("{:?}", f.role).to_lowercase(),
                    state,
                    f.path.display()
                ))?;
            }
            for s in &ctx.config.project().skipped {
                let line = format!("{} ({})", s.dir.display(), s.why);
                hrr::ui::print(format!(
                    "{:<9} {:<8} {}\n",
                    "project",
                    "skipped",
                    hrr::error::single_line(&line)
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
            let workflow = hrr::lua::scripts::embedded("triage")
                .ok_or_else(|| anyhow!("the triage workflow is missing from this build of hrr"))?;
            write_new(&path, &workflow.text()?)?;
            ctx.ui.status(&format!("wrote {}", path.display()));
            Ok(0)
        }
        ConfigCmd::Init { site, project, .. } => {
            let path = init_target(*site, *project)?;
            write_new(&path, &config::starter_text())?;
            ctx.ui.status(&format!("wrote {}", path.display()));
            Ok(0)
        }
    }
}

fn get(config: &Config, key: &str) -> anyhow::Result<i32> {
    if key == "output.workdir" {
        hrr::ui::print(format!("{}\n", hrr::workdir::configured(config).display()))?;
        return Ok(0);
    }
    if schema::spec(key).is_none()
        && !key.starts_with(schema::ALIAS_PREFIX)
        && key != schema::PROFILE_KEY
    {
        let hint = hrr::suggest::closest(key, schema::KEYS.iter().map(|k| k.key))
            .map(|s| format!("; did you mean '{s}'?"))
            .unwrap_or_default();
        bail!("unknown key '{key}'{hint}");
    }
    match config.get(key) {
        Some(toml::Value::String(s)) => hrr::ui::print(format!("{s}\n"))?,
        Some(v) => hrr::ui::print(format!("{v}\n"))?,
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
    hrr::safety::ensure_not_in_archive(path)?;
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
