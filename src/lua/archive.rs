//! `hrr.archive.resolve(path)`, `hrr.archive.info(path)` and
//! `hrr.archive.memory(path, {at=, address=})`: the same data as `hrr
//! archive info --json` and `hrr archive memory --json`, as Lua tables
//! (DESIGN §5). The paths that `resolve` hands a workflow to open
//! (`path`, `root`, each process's `path`) are the exact bytes of the
//! directories, also when they are not UTF-8.

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
    t.set(
        "memory",
        lua.create_function(|lua, (LuaPath(path), opts): (LuaPath, Option<Table>)| {
            let fail = |e: String| mlua::Error::runtime(format!("hrr.archive.memory: {e}"));
            let (at, address) = match opts {
                Some(o) => (
                    o.get::<Option<u64>>("at")?,
                    address(o.get("address")?).map_err(fail)?,
                ),
                None => (None, None),
            };
            let process = archive::single_process(&path).map_err(|e| fail(format!("{e:#}")))?;
            let report = archive::memory::MemoryReport::build(&process, at, address)
                .map_err(|e| fail(format!("{e:#}")))?;
            super::to_lua(lua, &report)
        })?,
    )?;
    hrr.set("archive", t)
}

/// `address=`: an integer, or a `0x…` / decimal string.
fn address(v: mlua::Value) -> Result<Option<u64>, String> {
    match v {
        mlua::Value::Nil => Ok(None),
        mlua::Value::Integer(i) => u64::try_from(i)
            .map(Some)
            .map_err(|_| format!("address must not be negative, got {i}")),
        mlua::Value::String(s) => archive::memory::parse_address(&s.to_string_lossy()).map(Some),
        other => Err(format!(
            "address must be an integer or a string, got a {}",
            other.type_name()
        )),
    }
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
