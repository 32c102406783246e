//! The `hrr` global: the top-level functions (`out`, `args`, `workdir`,
//! `confirm`) and one `register` call per namespace module.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::rc::Rc;

use mlua::Lua;

use super::Invocation;
use crate::context::Context;

/// The workdir once created in this Lua state (`hrr.workdir()`).
struct Workdir(PathBuf);

/// Files outside the workdir that the user named for writing (`-o`).
pub struct NamedOutputs(pub Vec<PathBuf>);

/// Builds the `hrr` table with every namespace and sets it as a global.
pub fn register(lua: &Lua, ctx: &Rc<Context>, invocation: Invocation) -> mlua::Result<()> {
    let hrr = lua.create_table()?;
    let args = invocation
        .args
        .iter()
        .map(|a| super::path::to_lua(lua, std::path::Path::new(a)))
        .collect::<mlua::Result<Vec<_>>>()?;
    hrr.set("args", lua.create_sequence_from(args)?)?;
    let opts = super::to_lua(lua, &invocation.opts)?;
    if let mlua::Value::Table(t) = &opts {
        for (key, path) in &invocation.path_opts {
            t.set(*key, super::path::to_lua(lua, path)?)?;
        }
    }
    hrr.set("opts", opts)?;
    lua.set_app_data(NamedOutputs(invocation.outputs));
    hrr.set(
        "stamp",
        lua.create_function(|_, ()| Ok(crate::workdir::stamp()))?,
    )?;
    hrr.set(
        "out",
        lua.create_function(|_, text: mlua::LuaString| {
            crate::ui::print(&*text.as_bytes()).map_err(|e| {
                mlua::Error::runtime(format!("hrr.out: {}", crate::error::one_line(&e)))
            })
        })?,
    )?;
    let c = Rc::clone(ctx);
    hrr.set(
        "workdir",
        lua.create_function(move |lua, ()| super::path::to_lua(lua, &workdir(lua, &c)?))?,
    )?;
    hrr.set(
        "interactive",
        lua.create_function(|_, ()| Ok(interactive()))?,
    )?;
    hrr.set(
        "confirm",
        lua.create_function(|_, question: String| Ok(confirm(&question)))?,
    )?;
    super::archive::register(lua, &hrr, ctx)?;
    super::config::register(lua, &hrr, ctx)?;
    super::log::register(lua, &hrr, ctx)?;
    super::fs::register(lua, &hrr, ctx)?;
    super::exec::register(lua, &hrr, ctx)?;
    super::json::register(lua, &hrr, ctx)?;
    super::finding::register(lua, &hrr, ctx)?;
    super::classify::register(lua, &hrr, ctx)?;
    super::render::register(lua, &hrr, ctx)?;
    super::replay::register(lua, &hrr, ctx)?;
    super::preflight::register(lua, &hrr, ctx)?;
    super::playback::register(lua, &hrr, ctx)?;
    super::workflow::register(lua, &hrr, ctx)?;
    lua.globals().set("hrr", hrr)
}

/// The workdir of this run, created (0700, checked) on first use.
pub fn workdir(lua: &Lua, ctx: &Context) -> mlua::Result<PathBuf> {
    if let Some(w) = lua.app_data_ref::<Workdir>() {
        return Ok(w.0.clone());
    }
    let dir =
        crate::workdir::ensure(&ctx.config, &|m| ctx.ui.warn(m)).map_err(mlua::Error::external)?;
    lua.set_app_data(Workdir(dir.clone()));
    Ok(dir)
}

/// A person can answer a prompt: stdin and stderr are terminals.
fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Asks `question` on the terminal; `false` without a terminal on both stdin
/// and stderr, or on anything but y/yes.
fn confirm(question: &str) -> bool {
    if !interactive() {
        return false;
    }
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{} [y/N] ", crate::ui::inert(question));
    let _ = err.flush();
    drop(err);
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}
