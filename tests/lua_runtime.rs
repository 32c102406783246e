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
