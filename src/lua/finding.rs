//! `hrr.finding.add_label(f, label, detail)`, `add_note(f, text)`,
//! `add_next_step(f, text)`, and the conversion of findings between Rust and
//! Lua. Finding tables carry methods too: `f:label(l, d)`, `f:note(t)`,
//! `f:next_step(t)` change `f` in place and return it.

use std::rc::Rc;

use mlua::{Lua, Table, Value};

use crate::context::Context;
use crate::finding::{Finding, Label};

/// Registry key of the metatable that gives finding tables their methods.
pub(super) const METATABLE: &str = "hrr.finding.metatable";

/// A finding as a Lua table: unknown fields are `nil` (not a null
/// sentinel), lists are sequences, and the finding methods are attached.
pub fn to_lua(lua: &Lua, f: &Finding) -> mlua::Result<Value> {
    let value = super::to_lua(lua, f)?;
    if let Value::Table(t) = &value {
        let mt: Table = lua.named_registry_value(METATABLE)?;
        t.set_metatable(Some(mt))?;
    }
    Ok(value)
}

/// A Lua finding table back to a [`Finding`]; `who` names the caller in errors.
pub fn from_lua(lua: &Lua, value: Value, who: &str) -> mlua::Result<Finding> {
    if !value.is_table() {
        return Err(mlua::Error::runtime(format!(
            "{who}: expected a finding table (from hrr.classify), got {}",
            value.type_name()
        )));
    }
    super::bridge::from_lua_value(lua, value)
        .map_err(|e| mlua::Error::runtime(format!("{who}: not a finding: {e}")))
}

fn parse_label(label: &str, who: &str) -> mlua::Result<Label> {
    label
        .parse()
        .map_err(|e| mlua::Error::runtime(format!("{who}: {e}")))
}

/// What one of the three edits does.
#[derive(Clone, Copy)]
enum Edit {
    Label,
    Note,
    NextStep,
}

impl Edit {
    fn name(self) -> &'static str {
        match self {
            Edit::Label => "add_label",
            Edit::Note => "add_note",
            Edit::NextStep => "add_next_step",
        }
    }

    /// The field of the finding table this edit changes.
    fn field(self) -> &'static str {
        match self {
            Edit::Label => "labels",
            Edit::Note => "notes",
            Edit::NextStep => "next_steps",
        }
    }

    fn apply(self, lua: &Lua, f: Value, a: String, b: Option<String>) -> mlua::Result<Finding> {
        let who = format!("hrr.finding.{}", self.name());
        let mut finding = from_lua(lua, f, &who)?;
        match self {
            Edit::Label => finding.add_label(parse_label(&a, &who)?, b.unwrap_or_default()),
            Edit::Note => finding.add_note(a),
            Edit::NextStep => finding.add_next_step(a),
        }
        Ok(finding)
    }
}

/// Registers `hrr.finding` and the finding-table metatable.
pub fn register(lua: &Lua, hrr: &Table, _ctx: &Rc<Context>) -> mlua::Result<()> {
    let methods = lua.create_table()?;
    let t = lua.create_table()?;
    for (edit, method) in [
        (Edit::Label, "label"),
        (Edit::Note, "note"),
        (Edit::NextStep, "next_step"),
    ] {
        t.set(
            edit.name(),
            lua.create_function(move |lua, (f, a, b): (Value, String, Option<String>)| {
                let finding = edit.apply(lua, f, a, b)?;
                to_lua(lua, &finding)
            })?,
        )?;
        methods.set(
            method,
            lua.create_function(move |lua, (this, a, b): (Table, String, Option<String>)| {
                let finding = edit.apply(lua, Value::Table(this.clone()), a, b)?;
                let Value::Table(updated) = to_lua(lua, &finding)? else {
                    return Err(mlua::Error::runtime("hrr.finding: conversion failed"));
                };
                this.set(edit.field(), updated.get::<Value>(edit.field())?)?;
                Ok(this)
            })?,
        )?;
    }
    let mt = lua.create_table()?;
    mt.set("__index", methods)?;
    lua.set_named_registry_value(METATABLE, mt)?;
    hrr.set("finding", t)
}
