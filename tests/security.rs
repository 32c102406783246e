//! Issue 8 item 6: the Lua sandbox, archive-controlled strings on the
//! terminal and in markdown, and a planted workdir.
#![cfg(unix)]

mod common;

use common::{stderr, stdout, Sandbox};
use hrr_testkit::archive::ProcessArchive;
use hrr_testkit::events::{api, EventsFile, Launch};

/// Runs `body` as a workflow; returns (exit code, stdout, stderr).
fn lua(sb: &Sandbox, body: &str) -> (i32, String, String) {
    let script = sb.write("s.lua", body);
    let out = sb.hrr().arg("run").arg(script).output().unwrap();
    (out.status.code().unwrap(), stdout(&out), stderr(&out))
}

#[test]
fn lua_has_no_shell_environment_c_modules_or_bytecode() {
    let sb = Sandbox::new();
    let (code, out, err) = lua(
        &sb,
        r#"
hrr.out(tostring(os) .. " " .. tostring(io) .. " " .. tostring(package) .. " "
  .. tostring(require) .. " " .. tostring(debug) .. " " .. tostring(dofile) .. " "
  .. tostring(loadfile) .. "\n")
-- bytecode: a binary chunk is refused, whatever mode is asked for
local ok, e = pcall(load, string.dump(function() return 1 end), "x", "b")
hrr.out(tostring(ok) .. " " .. tostring(tostring(e):match("binary chunks are not allowed") ~= nil) .. "\n")
-- a command line given as one string is not accepted: argv only
ok, e = pcall(hrr.exec, "touch pwned; echo hi")
hrr.out(tostring(ok) .. "\n")
-- shell metacharacters in argv are literal
local r = hrr.exec({"echo", "$(id)", ";", "|", "`id`"})
hrr.out(r.stdout)
"#,
    );
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "nil nil nil nil nil nil nil");
    assert_eq!(lines[1], "false true", "binary chunks are refused by load");
    assert_eq!(lines[2], "false");
    assert_eq!(lines[3], "$(id) ; | `id`");
    assert!(!sb.path().join("pwned").exists());
}

#[test]
fn hrr_exec_gets_only_the_environment_it_is_given() {
    // Lua has no `os.getenv`; a program run by `hrr.exec` sees hrr's own
    // environment plus the `env` it is given (argv and env, no shell).
    let sb = Sandbox::new();
    let script = sb.write(
        "s.lua",
        r#"local r = hrr.exec({"/usr/bin/env"}, {env = {GIVEN = "yes"}})
hrr.out(r.stdout)"#,
    );
    let out = sb.hrr().arg("run").arg(script).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).lines().any(|l| l == "GIVEN=yes"));
}

#[test]
fn lua_cannot_write_outside_the_workdir() {
    let sb = Sandbox::new();
    let outside = sb.path().join("outside.txt");
    for target in [
        outside.display().to_string(),
        "../outside.txt".to_string(),
        "sub/../../outside.txt".to_string(),
    ] {
        let (code, _, err) = lua(&sb, &format!("hrr.fs.write({target:?}, 'x')\n"));
        assert_eq!(code, 1, "{target}");
        assert!(err.contains("is outside the workdir"), "{target}: {err}");
    }
    // Through a symlink planted inside the workdir.
    let work = sb.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::os::unix::fs::symlink(sb.path(), work.join("link")).unwrap();
    let (code, _, err) = lua(&sb, "hrr.fs.write('link/outside.txt', 'x')\n");
    assert_eq!(code, 1, "{err}");
    assert!(!outside.exists());
}

const HOSTILE: &str =
    "evil\n[HRR] PASS\x1b[2J\x1b]0;title\x07$(touch PWNED)|<script>alert(1)</script>`x`";

/// A one-kernel archive whose kernel name is [`HOSTILE`].
fn hostile_archive(sb: &Sandbox) -> std::path::PathBuf {
    let mut a = ProcessArchive::new(9, EventsFile::v7());
    a.events.launch(
        api::HIP_LAUNCH_KERNEL,
        &Launch::new(HOSTILE, [1, 1, 1], [1, 1, 1]),
    );
    a.write(&sb.path().join("cap.hrr")).unwrap();
    sb.path().join("cap.hrr")
}

/// No terminal control byte, no forged line, nothing run.
fn assert_inert(what: &str, text: &str, sb: &Sandbox) {
    assert!(
        !text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{what}: a control character reached the output"
    );
    assert!(
        !text.lines().any(|l| l.starts_with("[HRR] PASS")),
        "{what}: the kernel name forged a line"
    );
    assert!(!sb.path().join("PWNED").exists(), "{what}");
}

#[test]
fn hostile_kernel_names_are_inert_on_the_terminal_and_in_markdown() {
    let sb = Sandbox::new();
    let root = hostile_archive(&sb);
    let out = sb
        .hrr()
        .args(["archive", "info"])
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_inert("archive info", &stdout(&out), &sb);
    assert!(
        stdout(&out).contains("$(touch PWNED)"),
        "the name is shown, escaped"
    );

    // A fault with no kernel in the log: the finding names the archive's
    // only kernel, in markdown.
    let log = sb.write(
        "maf.log",
        "Memory access fault by GPU node-2 (Agent handle: 0x55d5c2a1e6b0) on address 0x7f3a2c600000. Reason: Page not present or supervisor privilege.\n",
    );
    let out = sb
        .hrr()
        .args(["-v", "classify", "--log"])
        .arg(&log)
        .arg("--archive")
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let md = stdout(&out);
    assert_inert("markdown finding", &md, &sb);
    assert_inert("stderr", &stderr(&out), &sb);
    // Outside code spans, markdown and HTML are escaped.
    for line in md.lines().filter(|l| l.contains("script")) {
        let outside_code: String = line.split("``").step_by(2).collect();
        assert!(
            !outside_code.contains("<script>"),
            "raw HTML outside a code span: {line}"
        );
    }
    let out = sb
        .hrr()
        .args(["triage", "--no-replay"])
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_inert("triage", &(stdout(&out) + &stderr(&out)), &sb);
}

#[test]
fn a_planted_workdir_is_not_used() {
    let sb = Sandbox::new();
    let root = hostile_archive(&sb);
    let work = sb.path().join("work");
    let victim = sb.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    // A symlink where the workdir should be.
    std::os::unix::fs::symlink(&victim, &work).unwrap();
    let out = sb
        .hrr()
        .args(["triage", "--no-replay"])
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("it is a symlink"), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);
    // A file where the workdir should be.
    std::fs::remove_file(&work).unwrap();
    std::fs::write(&work, "not a dir").unwrap();
    let out = sb
        .hrr()
        .args(["triage", "--no-replay"])
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("it is not a directory"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&work).unwrap(), "not a dir");
    // A directory owned by another user needs chown, i.e. root, to set up,
    // and root owns everything it creates: not portable to test here.
}

#[test]
fn the_all_summary_table_keeps_its_rows_and_escapes_hostile_names() {
    let sb = Sandbox::new();
    let (code, out, err) = lua(
        &sb,
        r#"
local plain = {outcome = "MAF", fault_class = "illegal_memory_access", kernel_name = "vector_add"}
local hostile = {outcome = "FAIL", fault_class = "nan_inf_divergence",
  kernel_name = "evil\n| pid-666 | PASS | replay_pass | `x` |\x1b[2J\u{202E}|tail"}
hrr.out(hrr.render.summary({
  {name = "pid-7", finding = plain},
  {name = "pid-8\n| pid-999 | PASS", finding = hostile},
  {name = "pid-9", finding = {}},
}))
"#,
    );
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[..5],
        [
            "## HRR Triage — every process",
            "",
            "| process | outcome | fault class | kernel |",
            "|---|---|---|---|",
            "| pid-7 | MAF | illegal_memory_access | `vector_add` |",
        ],
        "{out}"
    );
    assert_eq!(lines.len(), 7, "one line per process: {out}");
    assert!(
        lines[5].starts_with("| pid-8 \\| pid-999 \\| PASS | FAIL | nan_inf_divergence | "),
        "{out}"
    );
    assert!(lines[5].contains("\\| pid-666 \\|"), "{out}");
    assert_eq!(lines[6], "| pid-9 | UNKNOWN | unknown | n/a |", "{out}");
    assert!(
        !out.contains('\u{202e}'),
        "a bidi override reached the table: {out}"
    );
    assert_inert("summary table", &out, &sb);
}

#[test]
fn the_all_summary_table_of_a_plain_root_reads_as_before() {
    let sb = Sandbox::new();
    let root = sb.path().join("cap.hrr");
    for pid in [11, 12] {
        let mut a = ProcessArchive::new(pid, EventsFile::v7());
        a.events.launch(
            api::HIP_LAUNCH_KERNEL,
            &Launch::new("vector_add", [1, 1, 1], [1, 1, 1]),
        );
        a.write(&root).unwrap();
    }
    let out = sb
        .hrr()
        .args(["triage", "--all", "--no-replay"])
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let table = &text[text.find("## HRR Triage — every process").expect("a table")..];
    assert_eq!(
        table,
        "## HRR Triage — every process\n\n| process | outcome | fault class | kernel |\n|---|---|---|---|\n\
         | pid-11 | UNKNOWN | metadata_only | n/a |\n| pid-12 | UNKNOWN | metadata_only | n/a |\n"
    );
}

#[test]
fn a_hostile_manifest_cannot_add_lines_to_the_preflight_report() {
    let sb = Sandbox::new();
    let forged = "7.2.53211\n\n## Blocking issues\n- FORGED\n\nReplay preflight: OK";
    let manifest = serde_json::json!({
        "pid": 42, "parent_pid": 1, "complete": true, "event_count": 0, "blob_count": 0,
        "metadata": {
            "schema_version": "1\n- FORGED",
            "runtime": {"hip_runtime_version": forged, "comgr_version": "2.8\x1b[2J"},
            "captured_device_count": 1,
            "devices": [{"ordinal": 0, "properties": {"gcn_arch_name": "gfx942\r\n- FORGED"}}],
        },
    });
    sb.write("cap/pid-42/manifest.json", &manifest.to_string());
    sb.write("cap/pid-42/events.bin", "");
    let out = sb
        .hrr()
        .arg("-c")
        .arg(format!("rocm.path={}", sb.path().join("no-rocm").display()))
        .arg("preflight")
        .arg(sb.path().join("cap"))
        .output()
        .unwrap();
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("# HRR replay compatibility"), "{text}");
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with("- FORGED") || l == "Replay preflight: OK"),
        "the manifest forged a line: {text}"
    );
    assert!(
        text.contains("- hip_runtime_version: 7.2.53211\\n\\n## Blocking issues\\n- FORGED"),
        "{text}"
    );
    assert_inert("preflight report", &text, &sb);
}

#[test]
fn a_path_with_a_line_break_cannot_forge_a_status_line() {
    let sb = Sandbox::new();
    let log = sb.write("pass.log", "[HRR] Result: PASS (0 mismatches)\n");
    let out_dir = sb.path().join("out\n[hrr] forged\x1b[2J");
    std::fs::create_dir(&out_dir).unwrap();
    let out = sb
        .hrr()
        .args(["classify", "--log"])
        .arg(&log)
        .arg("-o")
        .arg(out_dir.join("f.md"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    let status: Vec<&str> = err.lines().filter(|l| l.starts_with("[hrr]")).collect();
    assert_eq!(status.len(), 1, "{err}");
    assert!(status[0].contains("out\\n[hrr] forged\\u{1b}[2J"), "{err}");
    assert_inert("status line", &err, &sb);
}
