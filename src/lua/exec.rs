//! `hrr.exec(argv, {timeout=, env=, cwd=})`: run a program from an argv
//! vector, never through a shell.

use std::rc::Rc;

use mlua::{Lua, Table};

use crate::context::Context;
use crate::subprocess::{self, ExecOptions};

/// Registers `hrr.exec`.
pub fn register(lua: &Lua, hrr: &Table, _ctx: &Rc<Context>) -> mlua::Result<()> {
    hrr.set(
        "exec",
        lua.create_function(|lua, (argv, opts): (Vec<String>, Option<Table>)| {
            let opts = options(opts)?;
            let captured = subprocess::run(&argv, &opts)
                .map_err(|e| mlua::Error::runtime(format!("hrr.exec: {e:#}")))?;
            super::to_lua(lua, &captured)
        })?,
    )
}

fn options(opts: Option<Table>) -> mlua::Result<ExecOptions> {
    let Some(t) = opts else {
        return Ok(ExecOptions::default());
    };
    let timeout = match t.get::<Option<mlua::Value>>("timeout")? {
        None => None,
        Some(mlua::Value::Integer(s)) => Some(seconds(s as f64, &s.to_string())?),
        Some(mlua::Value::Number(s)) => Some(seconds(s, &s.to_string())?),
        Some(mlua::Value::String(s)) => Some(
            crate::config::schema::parse_duration(&s.to_str()?)
                .map_err(|e| mlua::Error::runtime(format!("hrr.exec: timeout: {e}")))?,
        ),
        Some(other) => {
            return Err(mlua::Error::runtime(format!(
                "hrr.exec: timeout: expected seconds or \"30s\", got {}",
                other.type_name()
            )))
        }
    };
    let env = t
        .get::<Option<std::collections::BTreeMap<String, String>>>("env")?
        .unwrap_or_default()
        .into_iter()
        .collect();
    let cwd = t.get::<Option<String>>("cwd")?.map(Into::into);
    Ok(ExecOptions {
        timeout,
        env,
        cwd,
        ..ExecOptions::default()
    })
}

/// A timeout given as a number of seconds: a whole or fractional number
/// from 0 up to the longest limit `hrr` accepts (not `math.huge`, not NaN).
fn seconds(secs: f64, given: &str) -> mlua::Result<std::time::Duration> {
    let fail = |why: String| mlua::Error::runtime(format!("hrr.exec: timeout: {why}"));
    let d = std::time::Duration::try_from_secs_f64(secs).map_err(|_| {
        fail(format!(
            "{given} is not a number of seconds hrr can wait (use a whole or fractional number from 0, or a string such as \"30s\")"
        ))
    })?;
    crate::config::schema::within_max_duration(d, given).map_err(|e| fail(e.to_string()))
}
