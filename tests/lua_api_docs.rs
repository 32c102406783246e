//! The Lua API reference (`docs/lua-api.md`) and the editor stubs
//! (`docs/hrr.d.lua`, printed by `hrr lua-types`) against the `hrr` module
//! the code really registers: nothing missing, nothing invented, and every
//! example is Lua that loads.

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use common::{stdout, Sandbox};

fn doc(name: &str) -> String {
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/docs")).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn registered() -> BTreeSet<String> {
    let names = hrr::lua::registered_names().expect("the hrr module builds");
    assert!(names.len() > 20, "the walk found the namespaces: {names:?}");
    names.into_iter().collect()
}

/// The API names of the `###` headings: `### hrr.fs.write(path, text)` →
/// `hrr.fs.write`, `### f:label(…)` → `f:label`.
fn documented(markdown: &str) -> BTreeSet<String> {
    markdown
        .lines()
        .filter_map(|l| l.strip_prefix("### "))
        .map(|h| h.split(['(', ' ']).next().unwrap_or_default().to_string())
        .filter(|n| n.starts_with("hrr.") || n.starts_with("f:"))
        .collect()
}

/// What the stubs declare: `function hrr.x.y(` and `hrr.x = ` as `hrr.x.y`
/// / `hrr.x`, and `function <Class>:m(` as `f:m`. Namespace tables
/// (`hrr.fs = {}`) are declared too; they are dropped by the caller.
fn declared(stubs: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in stubs.lines() {
        if let Some(rest) = line.strip_prefix("function ") {
            let name = rest.split('(').next().unwrap_or_default();
            match name.split_once(':') {
                Some((_, method)) => names.insert(format!("f:{method}")),
                None => names.insert(name.to_string()),
            };
        } else if let Some((lhs, _)) = line.split_once(" = ") {
            if lhs.starts_with("hrr.") && !lhs.contains(' ') {
                names.insert(lhs.to_string());
            }
        }
    }
    names
}

#[test]
fn every_registered_name_is_documented_and_every_documented_name_is_registered() {
    let registered = registered();
    let documented = documented(&doc("lua-api.md"));
    let missing: Vec<_> = registered.difference(&documented).collect();
    let invented: Vec<_> = documented.difference(&registered).collect();
    assert!(
        missing.is_empty(),
        "registered but not documented: {missing:?}"
    );
    assert!(
        invented.is_empty(),
        "documented but not registered: {invented:?}"
    );
}

#[test]
fn the_stubs_declare_every_registered_name_and_nothing_else() {
    let registered = registered();
    let stubs = doc("hrr.d.lua");
    assert!(stubs.starts_with("---@meta"), "a LuaCATS definition file");
    let declared = declared(&stubs);
    let missing: Vec<_> = registered.difference(&declared).collect();
    assert!(
        missing.is_empty(),
        "registered but not in hrr.d.lua: {missing:?}"
    );
    // Declared names that are not registered must be namespace tables,
    // i.e. prefixes of registered names.
    let invented: Vec<_> = declared
        .difference(&registered)
        .filter(|d| !registered.iter().any(|r| r.starts_with(&format!("{d}."))))
        .collect();
    assert!(
        invented.is_empty(),
        "in hrr.d.lua but not registered: {invented:?}"
    );
}

#[test]
fn hrr_lua_types_prints_the_stubs() {
    let sb = Sandbox::new();
    let out = sb.hrr().arg("lua-types").output().unwrap();
    assert!(out.status.success());
    assert_eq!(stdout(&out), doc("hrr.d.lua"));
}

#[test]
fn every_lua_example_and_the_stubs_load_as_lua_text() {
    let reference = doc("lua-api.md");
    let blocks: Vec<&str> = reference
        .split("```lua\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap_or_default())
        .collect();
    assert!(blocks.len() >= 34, "one example per name at least");
    let lua = mlua::Lua::new();
    for (i, block) in blocks.iter().enumerate() {
        if let Err(e) = lua
            .load(*block)
            .set_name(format!("=example{i}"))
            .into_function()
        {
            panic!("example {i} is not valid Lua: {e}\n{block}");
        }
    }
    lua.load(doc("hrr.d.lua"))
        .set_name("=hrr.d.lua")
        .into_function()
        .expect("hrr.d.lua is valid Lua");
}

#[test]
fn the_complete_workflow_example_runs_on_the_example_archive() {
    let reference = doc("lua-api.md");
    let (_, last) = reference
        .split_once("## A complete workflow")
        .expect("the section");
    let script = last
        .split("```lua\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("its example");
    let sb = Sandbox::new();
    let file = sb.write("summary.lua", script);
    let archive = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/crash.hrr");
    let out = sb
        .hrr()
        .args(["run", file.to_str().unwrap(), archive])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    // The example root holds pid-4242 and pid-4243: one finding each.
    assert_eq!(stdout(&out), "2 finding(s)\n");
    let written = std::fs::read_dir(sb.path().join("work"))
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("summary-"))
        .expect("the summary file is in the workdir");
    let list: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(written.path()).unwrap()).unwrap();
    let archives: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["archive"].as_str().unwrap().rsplit('/').next().unwrap())
        .collect();
    assert_eq!(archives, ["pid-4242", "pid-4243"]);
}

#[test]
fn the_step_override_example_extends_the_embedded_triage() {
    let reference = doc("lua-api.md");
    let (_, section) = reference
        .split_once("### Overriding `triage.lua`")
        .expect("the section");
    let script = section
        .split("```lua\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("its example");
    let archive = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/crash.hrr");
    let triage = |sb: &Sandbox| -> serde_json::Value {
        let out = sb
            .hrr()
            .args(["triage", "--no-replay", "--format", "json", archive])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", common::stderr(&out));
        serde_json::from_slice(&out.stdout).expect("one JSON finding")
    };
    let plain = triage(&Sandbox::new());
    let sb = Sandbox::new();
    sb.write("xdg/hrr/scripts/triage.lua", script);
    let mut extended = triage(&sb);
    // The replaced step added its next step; every other step of the
    // preset produced exactly what the embedded workflow does.
    let steps = extended["next_steps"].as_array_mut().unwrap();
    assert_eq!(
        steps.pop().unwrap(),
        "file it in the GPU-RUNTIME queue with the finding attached"
    );
    assert_eq!(extended, plain);
}
