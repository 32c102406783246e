//! `hrr.render.markdown(f)`, `hrr.render.json(f)`,
//! `hrr.render.json_list({f1, f2, …})` (one JSON array, for `triage --all`)
//! and `hrr.render.summary({{name = …, finding = f}, …})` (the table after
//! the findings of `triage --all`).

use std::rc::Rc;

use mlua::{Lua, Table, Value};

use super::finding::from_lua;
use crate::context::Context;

/// Registers `hrr.render`.
pub fn register(lua: &Lua, hrr: &Table, _ctx: &Rc<Context>) -> mlua::Result<()> {
    let t = lua.create_table()?;
    t.set(
        "markdown",
        lua.create_function(|lua, f: Value| {
            Ok(crate::render::markdown(&from_lua(
                lua,
                f,
                "hrr.render.markdown",
            )?))
        })?,
    )?;
    t.set(
        "json",
        lua.create_function(|lua, f: Value| {
            Ok(crate::render::json(&from_lua(lua, f, "hrr.render.json")?))
        })?,
    )?;
    t.set(
        "json_list",
        lua.create_function(|lua, list: Table| {
            let findings = list
                .sequence_values::<Value>()
                .map(|v| from_lua(lua, v?, "hrr.render.json_list"))
                .collect::<mlua::Result<Vec<_>>>()?;
            let mut text =
                serde_json::to_string_pretty(&findings).map_err(mlua::Error::external)?;
            text.push('\n');
            Ok(text)
        })?,
    )?;
    t.set(
        "summary",
        lua.create_function(|lua, list: Table| {
            let rows = list
                .sequence_values::<Table>()
                .map(|row| {
                    let row = row.map_err(|_| {
                        mlua::Error::runtime(
                            "hrr.render.summary: expected a list of {name = …, finding = …} tables",
                        )
                    })?;
                    let name: String = row.get("name").map_err(|_| {
                        mlua::Error::runtime("hrr.render.summary: a row's name must be a string")
                    })?;
                    let finding = from_lua(lua, row.get("finding")?, "hrr.render.summary")?;
                    Ok((name, finding))
                })
                .collect::<mlua::Result<Vec<_>>>()?;
            Ok(crate::render::summary(&rows))
        })?,
    )?;
    hrr.set("render", t)
}
