//! Rust values to Lua and back, through serde.
//!
//! Lua's integers are 64-bit signed, so a `u64` of 2^63 or more (a
//! timestamp span, a trailer count or a pid from a hostile archive) would
//! become a rounded float. Such a value reaches Lua as its decimal string
//! instead (`"18446744073709551615"`, typed `integer|string` in `hrr.d.lua`),
//! and on the way back such a string is read as the exact number again.

use mlua::{Lua, LuaSerdeExt};
use serde_json::Value;

/// Converts a Rust value to a Lua value the way workflows expect: a JSON
/// `null` / `None` becomes `nil` (absent), not mlua's `NULL` sentinel, which
/// Lua would treat as true (`if f.kernel_name then` must be false for a PASS),
/// and an integer beyond the `i64` range becomes its decimal string.
pub fn to_lua<T: serde::Serialize + ?Sized>(lua: &Lua, value: &T) -> mlua::Result<mlua::Value> {
    let options = mlua::serde::SerializeOptions::new()
        .serialize_none_to_null(false)
        .serialize_unit_to_null(false);
    let mut json = serde_json::to_value(value).map_err(mlua::Error::external)?;
    wide_to_strings(&mut json);
    lua.to_value_with(&json, options)
}

/// Reads a Lua value (usually a table `to_lua` made, perhaps edited by the
/// script) back as `T`. A decimal string beyond the `i64` range stands for
/// that exact number; when reading it so does not fit `T` (a name field
/// that merely holds such digits), the value is read as it is.
pub fn from_lua_value<T: serde::de::DeserializeOwned>(
    lua: &Lua,
    value: mlua::Value,
) -> mlua::Result<T> {
    let as_is: Value = lua.from_value(value.clone())?;
    let mut widened = as_is.clone();
    if strings_to_wide(&mut widened) {
        if let Ok(t) = serde_json::from_value(widened) {
            return Ok(t);
        }
    }
    lua.from_value(value)
}

/// Replaces every number beyond the `i64` range with its decimal string.
fn wide_to_strings(value: &mut Value) {
    match value {
        Value::Number(n) if n.as_u64().is_some_and(|u| i64::try_from(u).is_err()) => {
            *value = Value::String(n.to_string());
        }
        Value::Array(items) => items.iter_mut().for_each(wide_to_strings),
        Value::Object(map) => map.values_mut().for_each(wide_to_strings),
        _ => {}
    }
}

/// Replaces every string that [`wide_to_strings`] could have made with its
/// number; true when there was one.
fn strings_to_wide(value: &mut Value) -> bool {
    match value {
        Value::String(s) => match wide(s) {
            Some(n) => {
                *value = Value::from(n);
                true
            }
            None => false,
        },
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |any, v| strings_to_wide(v) | any),
        Value::Object(map) => map
            .values_mut()
            .fold(false, |any, v| strings_to_wide(v) | any),
        _ => false,
    }
}

/// `s` as a `u64` beyond the `i64` range, written as `to_string` writes it
/// (digits only, no sign, no leading zero).
fn wide(s: &str) -> Option<u64> {
    let n: u64 = s.parse().ok()?;
    (i64::try_from(n).is_err() && n.to_string() == s).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Facts {
        pid: Option<u64>,
        total_events: u64,
        manifest: Value,
    }

    #[test]
    fn integers_past_i64_cross_as_strings_and_come_back_exact() {
        let lua = Lua::new();
        let facts = Facts {
            pid: Some(u64::MAX),
            total_events: 1 << 63,
            manifest: serde_json::json!({"pid": 18446744073709551615u64, "n": 7}),
        };
        let value = to_lua(&lua, &facts).unwrap();
        let t = value.as_table().unwrap();
        assert_eq!(t.get::<String>("pid").unwrap(), "18446744073709551615");
        assert_eq!(
            t.get::<String>("total_events").unwrap(),
            "9223372036854775808"
        );
        let back: Facts = from_lua_value(&lua, value.clone()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.pid, facts.pid);
        assert_eq!(back.total_events, facts.total_events);
        assert_eq!(back.manifest, facts.manifest);
    }

    #[test]
    fn a_name_of_digits_stays_a_name() {
        #[derive(serde::Deserialize)]
        struct Kernel {
            name: String,
            launches: i64,
        }
        let lua = Lua::new();
        let t = lua
            .load("return {name = '9223372036854775808', launches = 3}")
            .eval()
            .unwrap();
        let k: Kernel = from_lua_value(&lua, t).unwrap();
        assert_eq!((k.name.as_str(), k.launches), ("9223372036854775808", 3));
        assert_eq!(wide("09223372036854775808"), None);
        assert_eq!(wide("9223372036854775807"), None);
    }
}
