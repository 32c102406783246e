//! Lua workflows: lookup, sandbox, errors, exit codes, `hrr.exec`.

mod common;

use common::{stderr, stdout, Sandbox};

#[test]
fn a_workflow_in_a_scripts_dir_becomes_a_command() {
    let sb = Sandbox::new();
    sb.write(
        "xdg/hrr/scripts/greet.lua",
        "hrr.out('hello ' .. table.concat(hrr.args, ',') .. '\\n')\nreturn 4\n",
    );
    let out = sb.hrr().args(["greet", "a", "b"]).output().unwrap();
    assert_eq!(stdout(&out), "hello a,b\n");
    assert_eq!(out.status.code(), Some(4));
}

#[test]
fn sandbox_hides_io_os_debug_package_and_file_loaders() {
    let sb = Sandbox::new();
    let f = sb.write(
        "t.lua",
        "hrr.out(tostring(io)..tostring(os)..tostring(debug)..tostring(package)..tostring(require)..tostring(dofile)..tostring(loadfile))",
    );
    let out = sb.hrr().arg("run").arg(&f).output().unwrap();
    assert_eq!(stdout(&out), "nilnilnilnilnilnilnil");
}

#[test]
fn bytecode_cannot_be_loaded() {
    let sb = Sandbox::new();
    let f = sb.write(
        "bc.lua",
        "return load(string.dump(function() return 1 end))()\n",
    );
    let out = sb.hrr().arg("run").arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("binary chunks are not allowed"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn fs_write_outside_the_workdir_fails_clearly_inside_succeeds_0600() {
    let sb = Sandbox::new();
    let outside = sb.path().join("elsewhere.txt");
    let f = sb.write(
        "w.lua",
        &format!(
            "local p = hrr.fs.write('notes/a.txt', 'ok')\nhrr.out(p)\nhrr.fs.write('{}', 'no')\n",
            outside.display()
        ),
    );
    let out = sb.hrr().arg("run").arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let inside = sb.path().join("work/notes/a.txt");
    assert_eq!(stdout(&out), inside.display().to_string());
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "ok");
    assert!(!outside.exists());
    let err = stderr(&out);
    assert!(err.starts_with("error: w.lua:3: hrr.fs.write:"), "{err}");
    assert!(err.contains("is outside the workdir"), "{err}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&inside).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let wd = std::fs::metadata(sb.path().join("work"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(wd & 0o777, 0o700);
    }
}

#[test]
fn runtime_and_syntax_errors_report_file_and_line() {
    let sb = Sandbox::new();
    let f = sb.write("boom.lua", "local x = 1\n\nerror('kaput')\n");
    let out = sb.hrr().arg("run").arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), "error: boom.lua:3: kaput\n");
    let out = sb.hrr().arg("-v").arg("run").arg(&f).output().unwrap();
    assert!(
        stderr(&out).contains("stack traceback:"),
        "-v adds the traceback"
    );
    let f = sb.write("syn.lua", "local = 3\n");
    let out = sb.hrr().arg("run").arg(&f).output().unwrap();
    assert!(
        stderr(&out).starts_with("error: syn.lua:1:"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn runaway_and_memory_bombs_are_stopped() {
    let sb = Sandbox::new();
    let f = sb.write("loop.lua", "while true do end\n");
    let out = sb
        .hrr()
        .args(["-c", "lua.max_instructions=2000000", "run"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("ran more than 2000000 Lua instructions"),
        "{}",
        stderr(&out)
    );
    let f = sb.write(
        "mem.lua",
        "local t = {}\nfor i = 1, 1e9 do t[i] = string.rep('x', 4096) .. i end\n",
    );
    let out = sb
        .hrr()
        .args(["-c", "lua.max_memory=32MiB", "run"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("more memory than lua.max_memory"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn exec_passes_arguments_literally_without_a_shell() {
    let sb = Sandbox::new();
    let marker = sb.path().join("pwned");
    let f = sb.write(
        "x.lua",
        &format!(
            "local r = hrr.exec({{'echo', 'a; touch {m}', '$(touch {m})'}}, {{timeout='5s'}})\nhrr.out(r.stdout .. r.status)\n",
            m = marker.display()
        ),
    );
    let out = sb.hrr().arg("run").arg(&f).output().unwrap();
    assert_eq!(
        stdout(&out),
        format!("a; touch {m} $(touch {m})\n0", m = marker.display())
    );
    assert!(!marker.exists());
}

#[test]
fn config_get_and_json_round_trip() {
    let sb = Sandbox::new();
    let f = sb.write(
        "c.lua",
        "local t = hrr.json.decode(hrr.json.encode({n = hrr.config.get('replay.progress_seconds')}))\nhrr.out(tostring(t.n))\n",
    );
    let out = sb
        .hrr()
        .args(["-c", "replay.progress_seconds=12", "run"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(stdout(&out), "12");
}

/// Runs `body` as a script under a 1,000,000-instruction budget, bounded
/// so that a budget that does not hold fails the test instead of hanging it.
fn under_budget(sb: &Sandbox, name: &str, body: &str) -> std::process::Output {
    let f = sb.write(name, body);
    sb.hrr()
        .args(["-c", "lua.max_instructions=1000000", "run"])
        .arg(&f)
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap()
}

#[test]
fn the_budget_cannot_be_caught_or_escaped_into_a_coroutine() {
    let sb = Sandbox::new();
    let stopped =
        "error: script stopped: it ran more than 1000000 Lua instructions (raise lua.max_instructions if that is intended)\n";
    for (name, body) in [
        ("pcall.lua", "while true do pcall(function() while true do end end) end\n"),
        ("wrap.lua", "coroutine.wrap(function() while true do end end)()\n"),
        (
            "xpcall.lua",
            "while true do xpcall(function() while true do end end, function(m) return m end) end\n",
        ),
        (
            "handler.lua",
            "xpcall(function() while true do end end, function(m) while true do end end)\nreturn 0\n",
        ),
        (
            "resume.lua",
            "while true do coroutine.resume(coroutine.create(function() while true do end end)) end\n",
        ),
        (
            "caught.lua",
            "local ok = pcall(function() while true do end end)\nhrr.out('survived')\nreturn 0\n",
        ),
    ] {
        let out = under_budget(&sb, name, body);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", stderr(&out));
        assert_eq!(stderr(&out), stopped, "{name}");
        assert_eq!(stdout(&out), "", "{name}");
    }
}

#[test]
fn pcall_and_coroutines_still_work_within_the_budget() {
    let sb = Sandbox::new();
    let out = under_budget(
        &sb,
        "ok.lua",
        "local co = coroutine.wrap(function() local ok, v = pcall(function() return coroutine.yield(1) + 1 end) coroutine.yield(v) end)\n\
         local a, b = co(), co(41)\n\
         local ok, err = pcall(error, 'boom', 0)\n\
         local xok, xerr = xpcall(function() error('x', 0) end, function(m) return 'handled ' .. m end)\n\
         hrr.out(a .. ' ' .. b .. ' ' .. tostring(ok) .. ' ' .. err .. ' ' .. xerr)\n",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "1 42 false boom handled x");
}

#[test]
fn finalizers_which_run_outside_the_budget_are_refused() {
    let sb = Sandbox::new();
    let out = under_budget(
        &sb,
        "gc.lua",
        "setmetatable({}, {__gc = function() while true do end end})\ncollectgarbage()\n",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: gc.lua:1: setmetatable: __gc finalizers are not allowed in hrr workflows (Lua runs them outside the instruction budget)\n"
    );
}

#[test]
fn a_memory_limit_below_what_the_hrr_module_needs_is_named() {
    let sb = Sandbox::new();
    let f = sb.write("m.lua", "return 0\n");
    let out = sb
        .hrr()
        .args(["-c", "lua.max_memory=1KiB", "run"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with(
            "error: lua.max_memory is 1024 bytes, too small: the hrr Lua module alone takes"
        ),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn exec_timeouts_beyond_any_clock_are_clear_errors() {
    let sb = Sandbox::new();
    for (timeout, shown) in [
        ("math.huge", "inf is not a number of seconds hrr can wait"),
        ("1e300", "is not a number of seconds hrr can wait"),
        ("-1", "-1 is not a number of seconds hrr can wait"),
        (
            "'584542046090y'",
            "is longer than the longest hrr accepts (366 days)",
        ),
    ] {
        let f = sb.write(
            "t.lua",
            &format!("hrr.exec({{'true'}}, {{timeout = {timeout}}})\n"),
        );
        let out = sb.hrr().arg("run").arg(&f).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{timeout}: {err}");
        assert!(
            err.starts_with("error: t.lua:1: hrr.exec: timeout: "),
            "{err}"
        );
        assert!(err.contains(shown), "{timeout}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn exec_keeps_what_was_printed_when_a_background_child_holds_the_pipe() {
    let sb = Sandbox::new();
    let f = sb.write(
        "bg.lua",
        "local r = hrr.exec({'sh', '-c', 'echo printed; sleep 8 &'}, {timeout = 30})\nhrr.out(r.stdout .. r.status)\n",
    );
    let start = std::time::Instant::now();
    let out = sb.hrr().arg("run").arg(&f).output().unwrap();
    assert_eq!(stdout(&out), "printed\n0", "{}", stderr(&out));
    assert!(start.elapsed() < std::time::Duration::from_secs(7));
}

#[test]
fn exec_in_a_missing_directory_names_the_directory() {
    let sb = Sandbox::new();
    let missing = sb.path().join("no-such-dir");
    let f = sb.write(
        "cwd.lua",
        &format!(
            "hrr.exec({{'true'}}, {{cwd = {:?}}})\n",
            missing.display().to_string()
        ),
    );
    let out = sb.hrr().arg("run").arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "error: cwd.lua:1: hrr.exec: cannot run 'true' in the working directory {}: No such file or directory (os error 2)\n",
            missing.display()
        )
    );
}
