//! `hrr.archive.resolve(path)` and `hrr.archive.info(path)`: the same data
//! as `hrr archive info --json`, as Lua tables (DESIGN §5).

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
    hrr.set("archive", t)
}
