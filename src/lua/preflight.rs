//! `hrr.preflight.check(archive, {mode=, image=, gpu=, strict_version=,
//! strict_arch=})`: the preflight report as a table (the `--json` shape).

use std::rc::Rc;

use mlua::{Lua, Table};

use super::path::LuaPath;
use crate::context::Context;
use crate::preflight::{self, PreflightOptions, ProbeMode};

/// Registers `hrr.preflight`.
pub fn register(lua: &Lua, hrr: &Table, ctx: &Rc<Context>) -> mlua::Result<()> {
    let t = lua.create_table()?;
    let c = Rc::clone(ctx);
    t.set(
        "check",
        lua.create_function(
            move |lua, (LuaPath(archive), opts): (LuaPath, Option<Table>)| {
                let opts = options(&c, opts)?;
                let report = preflight::check(&c, &archive, &opts)
                    .map_err(|e| mlua::Error::runtime(format!("hrr.preflight.check: {e:#}")))?;
                super::to_lua(lua, &report)
            },
        )?,
    )?;
    hrr.set("preflight", t)
}

/// The config's options with the table's fields on top.
fn options(ctx: &Context, table: Option<Table>) -> mlua::Result<PreflightOptions> {
    let mut opts = PreflightOptions::from_config(&ctx.config);
    let Some(t) = table else { return Ok(opts) };
    if let Some(image) = t.get::<Option<String>>("image")? {
        opts.image = Some(image);
        opts.mode = ProbeMode::Docker;
    }
    match t.get::<Option<String>>("mode")?.as_deref() {
        None => {}
        Some("host") => opts.mode = ProbeMode::Host,
        Some("docker") => opts.mode = ProbeMode::Docker,
        Some(other) => {
            return Err(mlua::Error::runtime(format!(
                "hrr.preflight.check: mode must be \"host\" or \"docker\", not \"{other}\""
            )))
        }
    }
    if let Some(gpu) = t.get::<Option<i64>>("gpu")? {
        let gpu = u32::try_from(gpu).map_err(|_| {
            mlua::Error::runtime(format!(
                "hrr.preflight.check: gpu must be an ordinal ≥ 0, not {gpu}"
            ))
        })?;
        opts.gpu = Some(gpu);
    }
    if let Some(on) = t.get::<Option<bool>>("strict_version")? {
        opts.strict.version = on;
    }
    if let Some(on) = t.get::<Option<bool>>("strict_arch")? {
        opts.strict.arch = on;
    }
    Ok(opts)
}
