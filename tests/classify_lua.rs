//! `hrr.classify`, `hrr.render.*` and `hrr.finding.*` from a Lua workflow.

mod common;

use common::{stderr, stdout, Sandbox};

fn fixture(name: &str) -> String {
    format!("{}/../shared/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn classify_annotate_and_render_from_lua() {
    let sb = Sandbox::new();
    let script = sb.write(
        "t.lua",
        &format!(
            r#"
local f = hrr.classify{{
  logs = {{"{log}", "{info}"}},
  replay = {{mode = "native", command = {{"hrr-playback", "/c/pid-79", "--sync-after-launch"}}, exit_code = nil, signal = 6, timed_out = false, duration_s = 1.5}},
  preflight = {{status = "ok", blocks = {{}}, warnings = {{"GPU architecture mismatch: capture GPU 0 is gfx950, replay GPU 0 looks like gfx942"}}}},
}}
assert(f.outcome == "MAF" and f.fault_class == "illegal_memory_access", f.outcome)
assert(f.kernel_name == "crash_oob" and f.kernel_source == "single_kernel_archive")
assert(f.failing_api == nil, "unknown fields are nil")
assert(f.replay_signal == 6 and f.replay.mode == "native")
f:label("BUILD-NEEDED", "built from /src")
local g = hrr.finding.add_next_step(f, "Tell the kernel owner.")
g = hrr.finding.add_note(g, "checked by hand")
assert(#f.next_steps + 1 == #g.next_steps)
hrr.out(hrr.render.markdown(g))
local ok, err = pcall(hrr.finding.add_label, g, "SHINY", "x")
assert(not ok and tostring(err):find("unknown label `SHINY`"), tostring(err))
ok, err = pcall(hrr.classify, {{logs = {{"/nonexistent.log"}}}})
assert(not ok and tostring(err):find("cannot read replay log /nonexistent.log"), tostring(err))
ok, err = pcall(hrr.classify, {{log = "x"}})
assert(not ok and tostring(err):find("unknown option `log`"), tostring(err))
local j = hrr.json.decode(hrr.render.json(g))
assert(j.schema_version == 1 and j.labels[2].label == "BUILD-NEEDED")
local m = hrr.classify{{archive = {{kind = "process", path = "/c/pid-79", events = 5}}, metadata_only = true,
                        preflight = {{status = "blocked"}}}}
assert(m.fault_class == "metadata_only", m.fault_class)
"#,
            log = fixture("replay_memory_fault.log"),
            info = fixture("info_crash.txt")
        ),
    );
    let out = sb.hrr().arg("run").arg(&script).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let md = stdout(&out);
    assert!(
        md.contains("- **F3** BUILD-NEEDED — built from /src"),
        "{md}"
    );
    assert!(md.contains("Tell the kernel owner."));
    assert!(md.contains("#### Preflight") && md.contains("GPU architecture mismatch"));
    assert!(md.contains("| Signal | 6 |"));
}
