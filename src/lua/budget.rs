//! The instruction budget of a workflow (`lua.max_instructions`).
//!
//! A count hook adds up the instructions of every Lua thread: it is set as
//! mlua's global hook, and Lua 5.4 copies a thread's hook into each coroutine
//! it creates, so `coroutine.create` and `coroutine.wrap` bodies are counted
//! too. Once the budget is spent the hook raises an error every time it
//! fires, and `pcall`, `xpcall`, `coroutine.resume` and `coroutine.close`
//! (everything in the loaded libraries that catches an error) are wrapped so
//! that they raise it again as they return. Whether the budget was spent is a
//! flag on the Rust side, never read from the error value, so a script can
//! neither swallow the stop nor forge it.
//!
//! Lua runs some code with hooks switched off, where no budget can be
//! counted: the message handler of an error raised by a hook, and `__gc`
//! finalizers. So `xpcall` skips the script's handler once the budget is
//! spent, and `setmetatable` refuses a metatable with a `__gc` field.

use std::cell::Cell;
use std::rc::Rc;

use mlua::{HookTriggers, Lua, MultiValue, VmState};

/// How often (in VM instructions) the budget hook runs.
const HOOK_EVERY: u32 = 10_000;

/// Wraps the functions that catch errors, given `recheck` (returns its
/// arguments, or raises the stop once the budget is spent) and `spent`. The
/// wrappers are Lua functions, not Rust ones, so a coroutine can still yield
/// inside a `pcall` (a Rust call frame cannot be yielded across).
const WRAP_CATCHERS: &str = r#"
local recheck, spent = ...
local raw_pcall, raw_xpcall, raw_setmetatable = pcall, xpcall, setmetatable
local resume, close = coroutine.resume, coroutine.close
local rawget, type, error = rawget, type, error
pcall = function(...) return recheck(raw_pcall(...)) end
xpcall = function(f, handler, ...)
  if type(handler) ~= "function" then return raw_xpcall(f, handler, ...) end
  local function guarded(message)
    if spent() then return message end
    return handler(message)
  end
  return recheck(raw_xpcall(f, guarded, ...))
end
coroutine.resume = function(...) return recheck(resume(...)) end
coroutine.close = function(...) return recheck(close(...)) end
setmetatable = function(t, mt)
  if type(mt) == "table" and rawget(mt, "__gc") ~= nil then
    error("setmetatable: __gc finalizers are not allowed in hrr workflows (Lua runs them outside the instruction budget)", 2)
  end
  return raw_setmetatable(t, mt)
end
"#;

/// The instructions a Lua state may still run.
pub struct Budget {
    used: Cell<u64>,
    max: u64,
}

impl Budget {
    /// The budget ran out: the script was stopped, whatever it did after.
    pub fn spent(&self) -> bool {
        self.used.get() > self.max
    }

    /// The one-line message of a stopped script.
    pub fn message(&self) -> String {
        format!(
            "script stopped: it ran more than {} Lua instructions (raise lua.max_instructions if that is intended)",
            self.max
        )
    }

    fn stop(&self) -> mlua::Error {
        mlua::Error::runtime(self.message())
    }
}

/// Installs a budget of `max` instructions on `lua`: the hook on every
/// thread and the wrapped error catchers.
pub fn install(lua: &Lua, max: u64) -> mlua::Result<Rc<Budget>> {
    let budget = Rc::new(Budget {
        used: Cell::new(0),
        max,
    });
    let counted = Rc::clone(&budget);
    lua.set_global_hook(
        HookTriggers::new().every_nth_instruction(HOOK_EVERY),
        move |_, _| {
            counted
                .used
                .set(counted.used.get().saturating_add(u64::from(HOOK_EVERY)));
            if counted.spent() {
                return Err(counted.stop());
            }
            Ok(VmState::Continue)
        },
    )?;
    let checked = Rc::clone(&budget);
    let recheck = lua.create_function(move |_, results: MultiValue| {
        if checked.spent() {
            return Err(checked.stop());
        }
        Ok(results)
    })?;
    let flag = Rc::clone(&budget);
    let spent = lua.create_function(move |_, ()| Ok(flag.spent()))?;
    lua.load(WRAP_CATCHERS)
        .set_name("=(budget)")
        .call::<()>((recheck, spent))?;
    Ok(budget)
}
