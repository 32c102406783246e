//! `hrr lua-types`: prints the LuaCATS annotations of the `hrr` Lua module
//! (`docs/hrr.d.lua`, embedded at build time) so lua-language-server can
//! complete and type-check workflows in an editor.

/// The annotation file, as shipped in `docs/hrr.d.lua`.
pub const STUBS: &str = include_str!("../../docs/hrr.d.lua");

/// Prints the stubs on stdout.
pub fn run() -> anyhow::Result<i32> {
    hrr::ui::print(STUBS)?;
    Ok(0)
}
