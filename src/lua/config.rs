//! `hrr.config.get(key)`: the effective configuration.

use std::rc::Rc;

use mlua::{Lua, Table};

use crate::context::Context;

/// Registers `hrr.config`.
pub fn register(lua: &Lua, hrr: &Table, ctx: &Rc<Context>) -> mlua::Result<()> {
    let t = lua.create_table()?;
    let c = Rc::clone(ctx);
    t.set(
        "get",
        lua.create_function(move |lua, key: String| {
            if key == "output.workdir" {
                return super::to_lua(
                    lua,
                    &crate::workdir::configured(&c.config).display().to_string(),
                );
            }
            match c.config.get(&key) {
                Some(v) => super::to_lua(lua, v),
                None => Ok(mlua::Nil),
            }
        })?,
    )?;
    hrr.set("config", t)
}
