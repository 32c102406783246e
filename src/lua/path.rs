//! Paths between Rust and Lua, byte for byte.
//!
//! Lua strings are bytes, and so are Unix paths, so a path reaches a
//! workflow exactly and comes back exactly: an archive whose name is not
//! UTF-8 is opened, not a look-alike with U+FFFD in it. Paths are converted
//! lossily only where they are shown. On Windows, where a path is UTF-16, a
//! path crosses as UTF-8 (an unpaired surrogate, which no UTF-8 string can
//! hold, is shown as U+FFFD).

use std::path::{Path, PathBuf};

use mlua::{FromLua, Lua, Value};

/// A path argument of a binding: any Lua string, taken as the exact path
/// bytes.
pub struct LuaPath(pub PathBuf);

impl FromLua for LuaPath {
    fn from_lua(value: Value, _lua: &Lua) -> mlua::Result<Self> {
        match value {
            Value::String(s) => Ok(LuaPath(from_bytes(&s.as_bytes()))),
            other => Err(mlua::Error::FromLuaConversionError {
                from: other.type_name(),
                to: "path".to_string(),
                message: Some("a path is a string".to_string()),
            }),
        }
    }
}

/// `path` (or any OS string, such as an argument) as a Lua string holding
/// its exact bytes.
pub fn to_lua(lua: &Lua, path: &Path) -> mlua::Result<mlua::LuaString> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        lua.create_string(path.as_os_str().as_bytes())
    }
    #[cfg(not(unix))]
    {
        lua.create_string(path.to_string_lossy().as_bytes())
    }
}

/// The path whose bytes `bytes` are.
fn from_bytes(bytes: &[u8]) -> PathBuf {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        std::ffi::OsStr::from_bytes(bytes).into()
    }
    #[cfg(not(unix))]
    {
        String::from_utf8_lossy(bytes).into_owned().into()
    }
}
