//! `hrr.preflight.check(archive, {mode=, image=, gpu=, strict_version=,
//! strict_arch=})`: the preflight report as a table (the `--json` shape).

use std::rc::Rc;

use mlua::{Lua, Table};

use super::path::LuaPath;
use crate::context::Context;
use crate::preflight::{self, Overrides, PreflightOptions, ProbeMode};

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
    let opts = PreflightOptions::from_config(&ctx.config);
    let Some(t) = table else { return Ok(opts) };
    let mode = match t.get::<Option<String>>("mode")?.as_deref() {
        None => None,
        Some("host") => Some(ProbeMode::Host),
        Some("docker") => Some(ProbeMode::Docker),
        Some(other) => {
            return Err(mlua::Error::runtime(format!(
                "hrr.preflight.check: mode must be \"host\" or \"docker\", not \"{other}\""
            )))
        }
    };
    let gpu = t
        .get::<Option<i64>>("gpu")?
        .map(|gpu| {
            u32::try_from(gpu).map_err(|_| {
                mlua::Error::runtime(format!(
                    "hrr.preflight.check: gpu must be an ordinal ≥ 0, not {gpu}"
                ))
            })
        })
        .transpose()?;
    Ok(opts.overridden(&Overrides {
        mode,
        image: t.get("image")?,
        gpu,
        strict_version: t.get("strict_version")?,
        strict_arch: t.get("strict_arch")?,
    }))
}
