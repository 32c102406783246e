//! `hrr.archive.resolve(path)`, `hrr.archive.info(path)` and
//! `hrr.archive.memory(path, {at=, address=})`: the same data as `hrr
//! archive info --json` and `hrr archive memory --json`, as Lua tables
//! (DESIGN §5).

use std::path::Path;
use std::rc::Rc;

use mlua::{Lua, Table};

use crate::archive;
use crate::context::Context;

/// Registers `hrr.archive`.
pub fn register(lua: &Lua, hrr: &Table, _ctx: &Rc<Context>) -> mlua::Result<()> {
    let t = lua.create_table()?;
    t.set(
        "resolve",
        lua.create_function(|lua, path: String| {
            let r = archive::resolve(Path::new(&path))
                .map_err(|e| mlua::Error::runtime(format!("hrr.archive.resolve: {e:#}")))?;
            super::to_lua(lua, &r)
        })?,
    )?;
    t.set(
        "info",
        lua.create_function(|lua, path: String| {
            let info = archive::info(Path::new(&path))
                .map_err(|e| mlua::Error::runtime(format!("hrr.archive.info: {e:#}")))?;
            super::to_lua(lua, &info)
        })?,
    )?;
    t.set(
        "memory",
        lua.create_function(|lua, (path, opts): (String, Option<Table>)| {
            let fail = |e: String| mlua::Error::runtime(format!("hrr.archive.memory: {e}"));
            let (at, address) = match opts {
                Some(o) => (
                    o.get::<Option<u64>>("at")?,
                    address(o.get("address")?).map_err(fail)?,
                ),
                None => (None, None),
            };
            let process =
                archive::single_process(Path::new(&path)).map_err(|e| fail(format!("{e:#}")))?;
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
