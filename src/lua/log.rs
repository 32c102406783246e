//! `hrr.log.info/warn/error(...)`: status lines on stderr.

use std::rc::Rc;

use mlua::{Lua, Table, Variadic};

use crate::context::Context;

/// Registers `hrr.log`.
pub fn register(lua: &Lua, hrr: &Table, ctx: &Rc<Context>) -> mlua::Result<()> {
    let t = lua.create_table()?;
    let c = Rc::clone(ctx);
    t.set(
        "info",
        lua.create_function(move |_, parts: Variadic<mlua::Value>| {
            c.ui.status(&join(&parts));
            Ok(())
        })?,
    )?;
    let c = Rc::clone(ctx);
    t.set(
        "warn",
        lua.create_function(move |_, parts: Variadic<mlua::Value>| {
            c.ui.warn(&join(&parts));
            Ok(())
        })?,
    )?;
    t.set(
        "error",
        lua.create_function(move |_, parts: Variadic<mlua::Value>| {
            crate::ui::stderr_line(&format!(
                "error: {}",
                crate::error::single_line(&join(&parts))
            ));
            Ok(())
        })?,
    )?;
    hrr.set("log", t)
}

fn join(parts: &[mlua::Value]) -> String {
    parts
        .iter()
        .map(|v| v.to_string().unwrap_or_else(|_| format!("{v:?}")))
        .collect::<Vec<_>>()
        .join(" ")
}
