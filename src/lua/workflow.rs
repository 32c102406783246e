//! `hrr.workflow.embedded(name)`: the value the workflow embedded in `hrr`
//! under `name` returns, so a site's `triage.lua` extends the preset (takes
//! its step table, replaces a step, returns it) instead of copying the file
//! and missing its later fixes.

use std::rc::Rc;

use mlua::chunk::ChunkMode;
use mlua::{Lua, Table, Value};

use super::scripts;
use crate::context::Context;

/// Registers `hrr.workflow`.
pub fn register(lua: &Lua, hrr: &Table, _ctx: &Rc<Context>) -> mlua::Result<()> {
    let t = lua.create_table()?;
    t.set(
        "embedded",
        lua.create_function(|lua, name: String| {
            let workflow = scripts::embedded(&name).ok_or_else(|| {
                let names: Vec<&str> = scripts::EMBEDDED.iter().map(|(n, _)| *n).collect();
                mlua::Error::runtime(format!(
                    "hrr.workflow.embedded: no workflow named '{name}' is embedded in hrr (embedded: {})",
                    names.join(", ")
                ))
            })?;
            let text = workflow.text().map_err(mlua::Error::external)?;
            lua.load(text)
                .set_name(workflow.chunk_name())
                .set_mode(ChunkMode::Text)
                .call::<Value>(())
        })?,
    )?;
    hrr.set("workflow", t)
}
