//! `hrr.archive.resolve(path)` and `hrr.archive.info(path)`: the same data
//! as `hrr archive info --json`, as Lua tables (DESIGN §5). The paths that
//! `resolve` hands a workflow to open (`path`, `root`, each process's
//! `path`) are the exact bytes of the directories, also when they are not
//! UTF-8.

use std::rc::Rc;

use mlua::{Lua, Table, Value};

use super::path::{self, LuaPath};

use crate::archive;
use crate::context::Context;

/// Registers `hrr.archive`.
pub fn register(lua: &Lua, hrr: &Table, _ctx: &Rc<Context>) -> mlua::Result<()> {
    let t = lua.create_table()?;
    t.set(
        "resolve",
        lua.create_function(|lua, LuaPath(path): LuaPath| {
            let r = archive::resolve(&path)
                .map_err(|e| mlua::Error::runtime(format!("hrr.archive.resolve: {e:#}")))?;
            exact_paths(lua, &r)
        })?,
    )?;
    t.set(
        "info",
        lua.create_function(|lua, LuaPath(path): LuaPath| {
            let info = archive::info(&path)
                .map_err(|e| mlua::Error::runtime(format!("hrr.archive.info: {e:#}")))?;
            super::to_lua(lua, &info)
        })?,
    )?;
    hrr.set("archive", t)
}

/// The resolve table of `r`, its paths replaced by their exact bytes.
fn exact_paths(lua: &Lua, r: &archive::ArchiveRef) -> mlua::Result<Value> {
    let value = super::to_lua(lua, r)?;
    let Value::Table(t) = &value else {
        return Ok(value);
    };
    t.set("path", path::to_lua(lua, &r.dir)?)?;
    if r.root.is_some() {
        if let Some(root) = r.dir.parent() {
            t.set("root", path::to_lua(lua, root)?)?;
        }
    }
    let processes: Table = t.get("processes")?;
    for (i, p) in r.processes.iter().enumerate() {
        let entry: Table = processes.get(i + 1)?;
        entry.set("path", path::to_lua(lua, &p.dir)?)?;
    }
    Ok(value)
}
