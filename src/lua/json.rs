//! `hrr.json.encode(value [, {pretty=true}])` and `hrr.json.decode(text)`.

use std::rc::Rc;

use mlua::{Lua, LuaSerdeExt, Table};

use crate::context::Context;

/// Registers `hrr.json`.
pub fn register(lua: &Lua, hrr: &Table, _ctx: &Rc<Context>) -> mlua::Result<()> {
    let t = lua.create_table()?;
    t.set(
        "encode",
        lua.create_function(|lua, (value, opts): (mlua::Value, Option<Table>)| {
            let json: serde_json::Value = lua.from_value(value)?;
            let pretty = opts
                .map(|o| o.get::<bool>("pretty"))
                .transpose()?
                .unwrap_or(false);
            let text = if pretty {
                serde_json::to_string_pretty(&json)
            } else {
                serde_json::to_string(&json)
            };
            text.map_err(mlua::Error::external)
        })?,
    )?;
    t.set(
        "decode",
        lua.create_function(|lua, text: String| {
            let json: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| mlua::Error::runtime(format!("hrr.json.decode: {e}")))?;
            super::to_lua(lua, &json)
        })?,
    )?;
    hrr.set("json", t)
}
