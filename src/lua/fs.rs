//! `hrr.fs.read/write/exists`: files for workflows. Writes go only under the
//! workdir or to an output the user named (DESIGN §8), by the rule of
//! [`crate::output_file`]; the directories they need are made 0700.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use mlua::{Lua, Table};

use super::path::LuaPath;
use crate::context::Context;
use crate::safety::resolve;

/// The largest file `hrr.fs.read` returns.
const READ_LIMIT: u64 = 64 << 20;

/// Registers `hrr.fs`.
pub fn register(lua: &Lua, hrr: &Table, ctx: &Rc<Context>) -> mlua::Result<()> {
    let t = lua.create_table()?;
    t.set(
        "exists",
        lua.create_function(|_, LuaPath(path): LuaPath| Ok(path.exists()))?,
    )?;
    t.set(
        "readable",
        lua.create_function(|_, LuaPath(path): LuaPath| Ok(std::fs::File::open(&path).is_ok()))?,
    )?;
    t.set(
        "read",
        lua.create_function(|lua, LuaPath(path): LuaPath| {
            let text = crate::user_input::read_all(&path, READ_LIMIT).map_err(|e| {
                mlua::Error::runtime(format!("hrr.fs.read: {}: {e}", path.display()))
            })?;
            lua.create_string(text)
        })?,
    )?;
    let c = Rc::clone(ctx);
    t.set(
        "write",
        lua.create_function(
            move |lua, (LuaPath(path), text): (LuaPath, mlua::LuaString)| {
                let named = lua
                    .app_data_ref::<super::api::NamedOutputs>()
                    .and_then(|n| n.0.iter().find(|o| resolve(o) == resolve(&path)).cloned());
                let target = match named {
                    Some(output) => output,
                    None => {
                        let workdir = super::api::workdir(lua, &c)?;
                        inside_workdir(&workdir, &path).map_err(mlua::Error::runtime)?
                    }
                };
                if let Some(parent) = target.parent() {
                    crate::workdir::create_private(parent).map_err(|e| {
                        mlua::Error::runtime(format!("hrr.fs.write: {}: {e}", parent.display()))
                    })?;
                }
                crate::output_file::write(&target, &text.as_bytes())
                    .map_err(mlua::Error::external)?;
                super::path::to_lua(lua, &target)
            },
        )?,
    )?;
    hrr.set("fs", t)
}

/// `path` (relative paths are taken relative to the workdir) when it lies
/// under `workdir` after resolving symlinks; an error naming both otherwise.
fn inside_workdir(workdir: &Path, given: &Path) -> Result<PathBuf, String> {
    let joined = if given.is_absolute() {
        given.to_path_buf()
    } else {
        workdir.join(given)
    };
    let target = resolve(&joined);
    if target.starts_with(resolve(workdir)) && target != resolve(workdir) {
        Ok(target)
    } else {
        Err(format!(
            "hrr.fs.write: {} is outside the workdir {}; workflows may only write there",
            given.display(),
            workdir.display()
        ))
    }
}
