//! `hrr.replay.run{archive=, player=, mode=, gpu=, timeout=, sync=, log=,
//! extra_args=, trace_kernels=, progress_seconds=}`: one replay, returning
//! the table `hrr replay --json` prints (log, exit_code, signal, timed_out,
//! duration_s, command, mode, gpu; unknown values are nil). Unset fields
//! come from the config. `hrr.replay.pick_gpu()`: the GPU `replay.gpu =
//! "auto"` means ([`crate::replay::gpu`]: most free VRAM per rocm-smi or amd-smi,
//! else the lowest GPU listed, else 0).

use std::rc::Rc;

use mlua::{Lua, Table, Value};

use super::path::LuaPath;
use crate::context::Context;
use crate::replay::{self, GpuChoice, Overrides, ReplayMode, ReplayRequest, SyncMode};

/// The option names `hrr.replay.run` accepts.
const KEYS: &[&str] = &[
    "archive",
    "player",
    "mode",
    "gpu",
    "timeout",
    "sync",
    "log",
    "extra_args",
    "trace_kernels",
    "progress_seconds",
];

/// Registers `hrr.replay`.
pub fn register(lua: &Lua, hrr: &Table, ctx: &Rc<Context>) -> mlua::Result<()> {
    let t = lua.create_table()?;
    let c = Rc::clone(ctx);
    t.set(
        "run",
        lua.create_function(move |lua, opts: Table| {
            let fail = |e: anyhow::Error| mlua::Error::runtime(format!("hrr.replay.run: {e:#}"));
            let (ctx, req) = request(&c, &opts).map_err(fail)?;
            let result = replay::run(&ctx, &req).map_err(fail)?;
            // Unknown values (no exit code, no signal) are nil.
            super::to_lua(lua, &result)
        })?,
    )?;
    let c = Rc::clone(ctx);
    t.set(
        "pick_gpu",
        lua.create_function(move |_, ()| {
            let (gpu, how) = replay::gpu::choose(&c, replay::GpuChoice::Auto);
            c.ui.status(&format!("GPU {gpu} ({how})"));
            Ok(gpu)
        })?,
    )?;
    hrr.set("replay", t)
}

/// The context (config with the table's settings applied) and request for
/// one call.
fn request(ctx: &Context, opts: &Table) -> anyhow::Result<(Context, ReplayRequest)> {
    for pair in opts.pairs::<Value, Value>() {
        let (key, _) = pair.map_err(lua_error)?;
        let name = key.to_string().map_err(lua_error)?;
        if !KEYS.contains(&name.as_str()) {
            anyhow::bail!("unknown option '{name}' (known: {})", KEYS.join(", "));
        }
    }
    let text = |key: &str| -> anyhow::Result<Option<String>> {
        Ok(match opts.get::<Value>(key).map_err(lua_error)? {
            Value::Nil => None,
            Value::String(s) => Some(s.to_str().map_err(lua_error)?.to_string()),
            Value::Integer(n) => Some(n.to_string()),
            Value::Number(f) if key == "timeout" => Some(format!("{}ms", (f * 1000.0).round())),
            Value::Boolean(b) => Some(b.to_string()),
            other => anyhow::bail!("{key}: unexpected {}", other.type_name()),
        })
    };
    let archive = opts
        .get::<Option<LuaPath>>("archive")
        .map_err(|e| anyhow::anyhow!("archive: {e}"))?
        .ok_or_else(|| anyhow::anyhow!("archive is required"))?
        .0;
    let overrides = Overrides {
        mode: text("mode")?.map(|m| parse_mode(&m)).transpose()?,
        gpu: text("gpu")?.map(|g| parse_gpu(&g)).transpose()?,
        timeout: text("timeout")?,
        sync: text("sync")?.map(|s| SyncMode::parse(&s)).transpose()?,
        trace_kernels: text("trace_kernels")?
            .map(|b| parse_number::<bool>("trace_kernels", &b))
            .transpose()?,
        progress_seconds: text("progress_seconds")?
            .map(|n| parse_number::<u32>("progress_seconds", &n))
            .transpose()?,
        player: text("player")?.map(Into::into),
        image: None,
    };
    let config = overrides.apply(&ctx.config, |field| format!("hrr.replay.run {field}"))?;
    let mut req = ReplayRequest::from_config(&config, archive)?;
    let extra_args = opts
        .get::<Option<Vec<String>>>("extra_args")
        .map_err(|e| anyhow::anyhow!("extra_args: expected a list of strings ({e})"))?;
    if let Some(extra) = extra_args {
        req.extra_args.extend(extra);
    }
    req.log = opts
        .get::<Option<LuaPath>>("log")
        .map_err(|e| anyhow::anyhow!("log: {e}"))?
        .map(|p| p.0);
    let ctx = Context {
        config,
        ui: ctx.ui.clone(),
    };
    req.locate_player(&ctx).map_err(|e| {
        anyhow::anyhow!("{e:#}; or pass player = hrr.playback.locate{{build=true}}.path")
    })?;
    Ok((ctx, req))
}

/// The `mode` field: auto, native or docker.
fn parse_mode(text: &str) -> anyhow::Result<ReplayMode> {
    <ReplayMode as clap::ValueEnum>::from_str(text, false)
        .map_err(|_| anyhow::anyhow!("mode: expected auto, native or docker, found \"{text}\""))
}

/// The `gpu` field: "auto" or a GPU ordinal.
fn parse_gpu(text: &str) -> anyhow::Result<GpuChoice> {
    if text == "auto" {
        return Ok(GpuChoice::Auto);
    }
    parse_number("gpu", text).map(GpuChoice::Ordinal)
}

/// A field holding a number or boolean, given to Lua as such or as text.
fn parse_number<T: std::str::FromStr>(field: &str, text: &str) -> anyhow::Result<T> {
    text.parse()
        .map_err(|_| anyhow::anyhow!("{field}: unexpected value \"{text}\""))
}

/// An mlua error (not `Send`) as an anyhow error with its message.
fn lua_error(e: mlua::Error) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}
