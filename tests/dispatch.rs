//! `hrr <name>` resolution: builtins, aliases, Lua workflows, externals.

mod common;

// The externals of these tests are shell scripts, so the tests that make
// one run on Unix only.
#[cfg(unix)]
use common::script;
use common::{stderr, stdout, Sandbox};

#[cfg(unix)]
#[test]
fn external_receives_name_args_and_environment_and_its_status_propagates() {
    let sb = Sandbox::new();
    let bin = sb.path().join("bin");
    script(
        &bin,
        "hrr-hello",
        "#!/bin/sh\necho \"argv: $*\"\necho \"HRR=$HRR\"\necho \"PROFILE=$HRR_PROFILE\"\necho \"FILES=$HRR_CONFIG_FILES\"\nexit 7\n",
    );
    sb.write("site.toml", "[profile.lab.replay]\ngpu = 1\n");
    let out = sb
        .hrr()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .args(["--profile", "lab", "hello", "a", "b c"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("argv: hello a b c"), "{text}");
    let hrr = assert_cmd::cargo::cargo_bin("hrr");
    assert!(text.contains(&format!("HRR={}", hrr.display())), "{text}");
    assert!(text.contains("PROFILE=lab"), "{text}");
    assert!(
        text.contains(&format!("FILES={}", sb.site_file().display())),
        "{text}"
    );
}

#[cfg(unix)]
#[test]
fn user_bin_dir_wins_over_path() {
    let sb = Sandbox::new();
    let path_bin = sb.path().join("bin");
    script(&path_bin, "hrr-who", "#!/bin/sh\necho path\n");
    script(
        &sb.user_dir().join("bin"),
        "hrr-who",
        "#!/bin/sh\necho user\n",
    );
    let out = sb
        .hrr()
        .env("PATH", format!("{}:/usr/bin:/bin", path_bin.display()))
        .arg("who")
        .output()
        .unwrap();
    assert_eq!(stdout(&out), "user\n");
}

#[cfg(unix)]
#[test]
fn builtins_cannot_be_shadowed_by_externals_scripts_or_aliases() {
    let sb = Sandbox::new();
    let bin = sb.path().join("bin");
    script(&bin, "hrr-config", "#!/bin/sh\necho hijacked\n");
    sb.write("xdg/hrr/scripts/config.lua", "hrr.out('hijacked')\n");
    sb.write("site.toml", "[alias]\nconfig = \"run nothing.lua\"\n");
    let out = sb
        .hrr()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .args(["config", "get", "replay.sync"])
        .output()
        .unwrap();
    assert_eq!(stdout(&out), "launch\n", "{}", stderr(&out));
}

#[cfg(unix)]
#[test]
fn list_shows_builtins_workflows_externals_and_aliases_with_origins() {
    let sb = Sandbox::new();
    let bin = sb.path().join("bin");
    script(&bin, "hrr-bundle", "#!/bin/sh\n");
    let user_script = sb.write(
        "xdg/hrr/scripts/flaky.lua",
        "-- replay three times\nreturn 0\n",
    );
    let project_script = sb.write(".hrr/scripts/flaky.lua", "return 0\n");
    sb.write("site.toml", "[alias]\nt = \"config show\"\n");
    let run = |verbose: bool| {
        let mut cmd = sb.hrr();
        cmd.env("PATH", format!("{}:/usr/bin:/bin", bin.display()));
        if verbose {
            cmd.arg("-v");
        }
        stdout(&cmd.arg("--list").output().unwrap())
    };
    let text = run(false);
    assert!(
        text.contains("Builtin commands:") && text.contains("    config "),
        "{text}"
    );
    assert!(text.contains("Lua workflows:\n    flaky"), "{text}");
    assert!(text.contains("External commands:\n    bundle"), "{text}");
    assert!(text.contains("    t              = config show"), "{text}");
    let text = run(true);
    let project_script = project_script.canonicalize().unwrap();
    assert!(
        text.contains(&format!("flaky          {}", project_script.display())),
        "project scripts win over user scripts: {text}"
    );
    assert!(
        text.contains(&format!("shadows {}", user_script.display())),
        "{text}"
    );
    assert!(
        text.contains(&bin.join("hrr-bundle").display().to_string()),
        "{text}"
    );
}

#[test]
fn unknown_command_suggests_and_points_at_list() {
    let sb = Sandbox::new();
    let out = sb.hrr().arg("confg").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: no such command: 'confg'; did you mean 'config'? (`hrr --list` shows every command)\n"
    );
}

#[test]
fn alias_expands_to_a_builtin_with_extra_arguments() {
    let sb = Sandbox::new();
    sb.write("site.toml", "[alias]\ncg = \"config get\"\n");
    let out = sb.hrr().args(["cg", "replay.mode"]).output().unwrap();
    assert_eq!(stdout(&out), "auto\n", "{}", stderr(&out));
}

#[cfg(unix)]
#[test]
fn help_for_an_external_runs_it_with_help() {
    let sb = Sandbox::new();
    let bin = sb.path().join("bin");
    script(&bin, "hrr-hello", "#!/bin/sh\necho \"help for: $*\"\n");
    let out = sb
        .hrr()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .args(["help", "hello"])
        .output()
        .unwrap();
    assert_eq!(stdout(&out), "help for: hello --help\n");
}

#[test]
fn bad_flags_are_one_error_and_exit_1() {
    let sb = Sandbox::new();
    let out = sb
        .hrr()
        .args(["config", "show", "--frobnicate"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error:")).count(),
        1,
        "{err}"
    );
    assert!(err.contains("--frobnicate"), "{err}");
}
