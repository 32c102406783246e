//! The names the `hrr` Lua module registers, read back from a freshly built
//! state, so the API reference and the editor stubs can be checked against
//! what the code really provides.

use std::rc::Rc;

use anyhow::anyhow;
use mlua::{Table, Value};

use super::{api, finding, new_state, Invocation};
use crate::config::Config;
use crate::context::Context;
use crate::ui::{ColorChoice, Ui};

/// Every name of the `hrr` module, sorted: functions and data fields with
/// their full dotted path (`hrr.archive.info`, `hrr.args`), and the methods
/// of finding tables as `f:<method>` (`f:label`). A table that holds
/// functions is a namespace and is walked; any other value is a field.
pub fn registered_names() -> anyhow::Result<Vec<String>> {
    let ctx = Rc::new(Context {
        config: Config::with_overrides(&[])?,
        ui: Ui::new(true, false, ColorChoice::Never),
    });
    let (lua, _budget) = new_state(&ctx)?;
    api::register(&lua, &ctx, Invocation::default())
        .map_err(|e| anyhow!("cannot build the hrr Lua module: {e}"))?;
    let mut names = collect(&lua).map_err(|e| anyhow!("cannot list the hrr Lua module: {e}"))?;
    names.sort();
    Ok(names)
}

/// The names in the `hrr` global of `lua` and the finding methods.
fn collect(lua: &mlua::Lua) -> mlua::Result<Vec<String>> {
    let mut names = Vec::new();
    let hrr: Table = lua.globals().get("hrr")?;
    walk(&hrr, "hrr", &mut names)?;
    let metatable: Table = lua.named_registry_value(finding::METATABLE)?;
    let methods: Table = metatable.get("__index")?;
    for pair in methods.pairs::<String, Value>() {
        let (name, value) = pair?;
        if value.is_function() {
            names.push(format!("f:{name}"));
        }
    }
    Ok(names)
}

fn walk(table: &Table, prefix: &str, names: &mut Vec<String>) -> mlua::Result<()> {
    for pair in table.pairs::<String, Value>() {
        let (key, value) = pair?;
        let name = format!("{prefix}.{key}");
        match value {
            Value::Table(t) if holds_functions(&t)? => walk(&t, &name, names)?,
            _ => names.push(name),
        }
    }
    Ok(())
}

fn holds_functions(table: &Table) -> mlua::Result<bool> {
    for pair in table.pairs::<Value, Value>() {
        if pair?.1.is_function() {
            return Ok(true);
        }
    }
    Ok(false)
}
