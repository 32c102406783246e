//! `hrr.classify{logs=…, archive=…, replay=…, preflight=…, metadata_only=…}`:
//! replay logs plus the tables of `hrr.archive.info` (or an archive path),
//! `hrr.replay.run` and `hrr.preflight.check` in, a finding table out.

use std::path::PathBuf;
use std::rc::Rc;

use mlua::{FromLua, Lua, Table, Value};

use super::path::LuaPath;

use super::finding::to_lua;
use crate::classify::{ArchiveFacts, Inputs};
use crate::context::Context;
use crate::finding::ReplayInfo;

const WHO: &str = "hrr.classify";
const OPTIONS: [&str; 5] = ["logs", "archive", "replay", "preflight", "metadata_only"];

fn err(msg: impl std::fmt::Display) -> mlua::Error {
    mlua::Error::runtime(format!("{WHO}: {msg}"))
}

fn table_option<T: serde::de::DeserializeOwned>(
    lua: &Lua,
    opts: &Table,
    key: &str,
    what: &str,
) -> mlua::Result<Option<T>> {
    match opts.get::<Value>(key)? {
        Value::Nil => Ok(None),
        Value::LightUserData(p) if p.0.is_null() => Ok(None),
        v @ Value::Table(_) => super::bridge::from_lua_value(lua, v)
            .map(Some)
            .map_err(|e| err(format!("{key} is not {what}: {e}"))),
        other => Err(err(format!(
            "{key} must be {what}, got a {}",
            other.type_name()
        ))),
    }
}

fn classify(lua: &Lua, opts: Table) -> mlua::Result<Value> {
    for pair in opts.pairs::<Value, Value>() {
        let (k, _) = pair?;
        let name = k.to_string()?;
        if !OPTIONS.contains(&name.as_str()) {
            return Err(err(format!(
                "unknown option `{name}` (known: {})",
                OPTIONS.join(", ")
            )));
        }
    }
    let logs: Vec<PathBuf> = match opts.get::<Value>("logs")? {
        Value::Nil => Vec::new(),
        s @ Value::String(_) => vec![LuaPath::from_lua(s, lua)?.0],
        v => Vec::<LuaPath>::from_lua(v, lua)
            .map_err(|e| err(format!("logs must be a list of paths: {e}")))?
            .into_iter()
            .map(|p| p.0)
            .collect(),
    };
    let archive: Option<ArchiveFacts> = match opts.get::<Value>("archive")? {
        Value::String(path) => {
            let path = LuaPath::from_lua(Value::String(path), lua)?.0;
            Some(crate::classify::archive_facts(&path).map_err(|e| err(format!("{e:#}")))?)
        }
        _ => table_option(
            lua,
            &opts,
            "archive",
            "an archive path or the table hrr.archive.info returns",
        )?,
    };
    let replay: Option<ReplayInfo> =
        table_option(lua, &opts, "replay", "the table hrr.replay.run returns")?;
    let preflight: Option<serde_json::Value> = table_option(
        lua,
        &opts,
        "preflight",
        "the table hrr.preflight.check returns",
    )?;
    let finding = Inputs {
        logs: &logs,
        archive: archive.as_ref(),
        replay: replay.as_ref(),
        preflight: preflight.as_ref(),
        metadata_only: opts.get::<Option<bool>>("metadata_only")?.unwrap_or(false),
    }
    .classify()
    .map_err(|e| err(format!("{e:#}")))?;
    to_lua(lua, &finding)
}

/// Registers `hrr.classify`.
pub fn register(lua: &Lua, hrr: &Table, _ctx: &Rc<Context>) -> mlua::Result<()> {
    hrr.set(
        "classify",
        lua.create_function(|lua, opts: Table| classify(lua, opts))?,
    )
}
