//! `hrr.playback.locate{build=bool}`: `{path, how, built, version}` of the
//! `hrr-playback` a replay would use, or `nil, err`.

use std::rc::Rc;

use mlua::{IntoLuaMulti, Lua, Table};

use crate::context::Context;

/// Registers `hrr.playback`.
pub fn register(lua: &Lua, hrr: &Table, ctx: &Rc<Context>) -> mlua::Result<()> {
    let t = lua.create_table()?;
    let c = Rc::clone(ctx);
    t.set(
        "locate",
        lua.create_function(move |lua, opts: Option<Table>| {
            let build = match &opts {
                Some(t) => t.get::<Option<bool>>("build")?.unwrap_or(false),
                None => false,
            };
            match crate::playback::locate(&c, build) {
                Ok(loc) => super::to_lua(lua, &loc)?.into_lua_multi(lua),
                Err(e) => (mlua::Nil, format!("{e:#}")).into_lua_multi(lua),
            }
        })?,
    )?;
    hrr.set("playback", t)
}
