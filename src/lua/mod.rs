//! The Lua runtime for workflows: Lua 5.4 with only `string`, `table`,
//! `math`, `utf8` and `coroutine`, text chunks only, an instruction budget
//! and a memory limit, and the `hrr` module (DESIGN §5).

mod api;
mod archive;
mod bridge;
mod budget;
mod classify;
mod config;
mod exec;
mod finding;
mod fs;
mod json;
mod log;
mod names;
mod path;
mod playback;
mod preflight;
mod render;
mod replay;
pub mod scripts;
mod workflow;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use anyhow::anyhow;
use mlua::chunk::ChunkMode;
use mlua::{Lua, LuaOptions, StdLib};

use crate::context::Context;
pub use bridge::to_lua;
pub use names::registered_names;
pub use scripts::Workflow;

/// What a workflow is started with.
#[derive(Clone, Debug, Default)]
pub struct Invocation {
    /// Positional arguments (`hrr.args`), passed byte for byte.
    pub args: Vec<OsString>,
    /// Options parsed by a builtin front end such as `hrr triage`
    /// (`hrr.opts`; an empty table otherwise).
    pub opts: serde_json::Map<String, serde_json::Value>,
    /// Options of `hrr.opts` that are paths, set as their exact bytes (a
    /// name that is not UTF-8 must still open) over those in `opts`.
    pub path_opts: Vec<(&'static str, PathBuf)>,
    /// Files outside the workdir the user named for writing (`-o FILE`);
    /// `hrr.fs.write` accepts exactly these besides the workdir.
    pub outputs: Vec<PathBuf>,
}

impl Invocation {
    /// An invocation with only positional arguments.
    pub fn with_args(args: Vec<OsString>) -> Invocation {
        Invocation {
            args,
            ..Invocation::default()
        }
    }
}

/// Runs `hrr run FILE args…`.
pub fn run_file(ctx: Rc<Context>, path: &Path, args: Vec<OsString>) -> anyhow::Result<i32> {
    if !path.is_file() {
        return Err(anyhow!("no such Lua script: {}", path.display()));
    }
    run_workflow(ctx, &Workflow::from_file(path), Invocation::with_args(args))
}

/// Runs a workflow; its integer return value is the exit code (nothing
/// returned = 0). A chunk that returns a table is a preset such as
/// `triage.lua`: its `run` step is called with `hrr.opts`, and what that
/// returns is the exit code.
pub fn run_workflow(
    ctx: Rc<Context>,
    workflow: &Workflow,
    invocation: Invocation,
) -> anyhow::Result<i32> {
    let value = evaluate(&ctx, workflow, invocation, |lua, value| match value {
        mlua::Value::Table(steps) => run_steps(lua, &steps),
        other => Ok(other),
    })?;
    let code = match value {
        mlua::Value::Integer(code) => code as f64,
        mlua::Value::Number(n) => n,
        _ => return Ok(0),
    };
    exit_code(code).ok_or_else(|| {
        anyhow!(
            "{}: the workflow returned {code}, which is not an exit code (a whole number 0-255)",
            workflow.chunk_name().trim_start_matches(['@', '='])
        )
    })
}

/// Calls the step `step` of a preset that returns a table of steps (such as
/// `triage.lua`'s `plan`) with `hrr.opts`, and returns what it returns as
/// JSON. A step that stops early the preset's way (an error table with
/// `code` and `message`) is that exit code and message.
pub fn run_step(
    ctx: Rc<Context>,
    workflow: &Workflow,
    invocation: Invocation,
    step: &'static str,
) -> anyhow::Result<serde_json::Value> {
    let outcome = evaluate(&ctx, workflow, invocation, |lua, value| {
        let mlua::Value::Table(steps) = value else {
            return Err(mlua::Error::runtime(format!(
                "the workflow returned no table of steps, so it has no {step} step"
            )));
        };
        let f: mlua::Function = steps.get(step).map_err(|_| {
            mlua::Error::runtime(format!("the workflow's steps have no {step} function"))
        })?;
        let opts = lua
            .globals()
            .get::<mlua::Table>("hrr")?
            .get::<mlua::Value>("opts")?;
        let stoppable = lua
            .load(STOPPABLE)
            .set_name("=hrr")
            .set_mode(ChunkMode::Text)
            .into_function()?;
        let (ok, value, message): (bool, mlua::Value, Option<String>) =
            stoppable.call((f, opts))?;
        if ok {
            return bridge::from_lua_value::<serde_json::Value>(lua, value).map(Ok);
        }
        let code = match value {
            mlua::Value::Integer(c) => i32::try_from(c).unwrap_or(1),
            _ => 1,
        };
        Ok(Err((code, message.unwrap_or_default())))
    })?;
    outcome.map_err(|(code, message)| crate::error::Failure::new(code, message).into())
}

/// Calls a step, returning `true, value`, or `false, code, message` when it
/// stops early with an error table of `code` and `message`; any other error
/// goes on.
const STOPPABLE: &str = r#"
local step, opts = ...
local ok, result = pcall(step, opts)
if ok then return true, result end
if type(result) == "table" and type(result.message) == "string" then
  return false, result.code, result.message
end
error(result, 0)
"#;

/// Loads `workflow` into a fresh state set up for `invocation`, runs its
/// chunk and gives what the chunk returns to `then`; a Lua error becomes
/// one message (its traceback a detail line), an interrupted replay the
/// signal's exit code.
fn evaluate<T>(
    ctx: &Rc<Context>,
    workflow: &Workflow,
    invocation: Invocation,
    then: impl FnOnce(&Lua, mlua::Value) -> mlua::Result<T>,
) -> anyhow::Result<T> {
    let text = workflow.text()?;
    let (lua, budget) = new_state(ctx)?;
    api::register(&lua, ctx, invocation)
        .map_err(|e| anyhow!("cannot set up the hrr Lua module: {e}"))?;
    limit_memory(&lua, ctx)?;
    let result = lua
        .load(text)
        .set_name(workflow.chunk_name())
        .set_mode(ChunkMode::Text)
        .call::<mlua::Value>(())
        .and_then(|value| then(&lua, value));
    if budget.spent() {
        return Err(anyhow!(budget.message()));
    }
    result.map_err(|err| {
        let (message, traceback) = describe(&err);
        if let Some(tb) = traceback {
            ctx.ui.detail(&tb);
        }
        if let Some(sig) = crate::replay::interrupted() {
            return crate::error::Failure::new(128 + sig, message).into();
        }
        anyhow!(message)
    })
}

/// Calls `steps.run(hrr.opts)` of a workflow that returned a table of steps.
fn run_steps(lua: &Lua, steps: &mlua::Table) -> mlua::Result<mlua::Value> {
    let run = match steps.get::<mlua::Value>("run")? {
        mlua::Value::Function(f) => f,
        _ => {
            return Err(mlua::Error::runtime(
                "the workflow returned a table without a run function; return a number, or a table of steps with run(opts)",
            ))
        }
    };
    let opts = lua
        .globals()
        .get::<mlua::Table>("hrr")?
        .get::<mlua::Value>("opts")?;
    run.call::<mlua::Value>(opts)
}

/// A workflow's return value as a process exit code. The OS keeps only the
/// low 8 bits, so 256 would read as success: anything outside 0–255 or not
/// whole is refused rather than wrapped.
fn exit_code(value: f64) -> Option<i32> {
    (value.fract() == 0.0 && (0.0..=255.0).contains(&value)).then_some(value as i32)
}

/// A fresh sandboxed Lua state with the instruction budget of `ctx.config`
/// (unlimited when unset). The memory limit is set by [`limit_memory`] once
/// the `hrr` module is registered.
fn new_state(ctx: &Context) -> anyhow::Result<(Lua, Rc<budget::Budget>)> {
    let libs = StdLib::STRING | StdLib::TABLE | StdLib::MATH | StdLib::UTF8 | StdLib::COROUTINE;
    let lua =
        Lua::new_with(libs, LuaOptions::default()).map_err(|e| anyhow!("cannot start Lua: {e}"))?;
    let max = ctx
        .config
        .int("lua.max_instructions")
        .map_or(u64::MAX, |n| n as u64);
    let budget = budget::install(&lua, max)
        .map_err(|e| anyhow!("cannot install the Lua instruction budget: {e}"))?;
    restrict_globals(&lua).map_err(|e| anyhow!("cannot sandbox Lua: {e}"))?;
    Ok((lua, budget))
}

/// Applies `lua.max_memory` (default 512 MiB). A limit that the state
/// already exceeds, with the `hrr` module loaded and nothing run yet, could
/// never run a script: it is refused with the size needed.
fn limit_memory(lua: &Lua, ctx: &Context) -> anyhow::Result<()> {
    let max_memory = ctx.config.size("lua.max_memory").unwrap_or(512 << 20);
    let limit = usize::try_from(max_memory).unwrap_or(usize::MAX);
    let used = lua.used_memory();
    if limit <= used {
        return Err(anyhow!(
            "lua.max_memory is {max_memory} bytes, too small: the hrr Lua module alone takes {used} bytes before a script runs; raise it (the default is 512MiB)"
        ));
    }
    lua.set_memory_limit(limit)
        .map_err(|e| anyhow!("cannot set the Lua memory limit: {e}"))?;
    Ok(())
}

/// Removes the base-library functions that reach the file system or load
/// bytecode: `dofile`, `loadfile`; `load` is replaced by a text-only version.
fn restrict_globals(lua: &Lua) -> mlua::Result<()> {
    let g = lua.globals();
    g.set("dofile", mlua::Nil)?;
    g.set("loadfile", mlua::Nil)?;
    let load = lua.create_function(|lua, (chunk, name): (mlua::Value, Option<String>)| {
        let text = match chunk {
            mlua::Value::String(s) => s.as_bytes().to_vec(),
            _ => {
                return Err(mlua::Error::runtime(
                    "load: only a string chunk is accepted",
                ))
            }
        };
        if text.first() == Some(&0x1b) {
            return Err(mlua::Error::runtime("load: binary chunks are not allowed"));
        }
        let f = lua
            .load(text)
            .set_name(name.unwrap_or_else(|| "=(load)".into()))
            .set_mode(ChunkMode::Text)
            .into_function()?;
        Ok(f)
    })?;
    g.set("load", load)
}

/// The one-line message (`file:line: message`) and, when Lua has one, the
/// traceback of a script error.
fn describe(err: &mlua::Error) -> (String, Option<String>) {
    match err {
        mlua::Error::SyntaxError { message, .. } => (first_line(message), None),
        mlua::Error::RuntimeError(msg) => split_traceback(msg),
        mlua::Error::MemoryError(_) => (
            "script stopped: it used more memory than lua.max_memory allows".into(),
            None,
        ),
        mlua::Error::CallbackError { traceback, cause } => {
            let (inner, _) = describe(cause);
            let at = traceback
                .lines()
                .map(str::trim)
                .find(|l| l.contains(".lua:") && !l.starts_with("[C]"))
                .and_then(|l| l.split(": in ").next())
                .map(|loc| format!("{}: ", loc.trim_end_matches(':')))
                .unwrap_or_default();
            let inner = if inner.starts_with(&at) || at.is_empty() {
                inner
            } else {
                format!("{at}{inner}")
            };
            (inner, Some(traceback.clone()))
        }
        mlua::Error::ExternalError(e) => (e.to_string(), None),
        other => (first_line(&other.to_string()), None),
    }
}

fn split_traceback(msg: &str) -> (String, Option<String>) {
    match msg.split_once("\nstack traceback:") {
        Some((head, tb)) => (head.to_string(), Some(format!("stack traceback:{tb}"))),
        None => (msg.to_string(), None),
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().to_string()
}
