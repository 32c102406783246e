//! `hrr config …` through the binary: layers, origins, errors, init.

mod common;

use common::{stderr, stdout, Sandbox};

#[test]
fn each_layer_overrides_the_one_below_and_origin_names_it() {
    let sb = Sandbox::new();
    sb.write(
        "site.toml",
        "[replay]\ntimeout = \"5m\"\nsync = \"event\"\ngpu = 1\n",
    );
    sb.write(
        "xdg/hrr/config.toml",
        "[replay]\ntimeout = \"10m\"\ngpu = 2\n",
    );
    sb.write("proj/.hrr/config.toml", "[replay]\ngpu = 3\n");
    std::fs::create_dir_all(sb.path().join("proj/sub")).unwrap();
    let out = sb
        .hrr()
        .current_dir(sb.path().join("proj/sub"))
        .env("GPU", "4")
        .args(["config", "show", "--origin"])
        .output()
        .unwrap();
    let text = stdout(&out);
    let site = sb.site_file();
    let user = sb.user_dir().join("config.toml");
    assert!(
        text.contains(&format!("sync = \"event\"  # {}:3", site.display())),
        "{text}"
    );
    assert!(
        text.contains(&format!("timeout = \"10m\"  # {}:2", user.display())),
        "{text}"
    );
    assert!(text.contains("gpu = 4  # env GPU (legacy)"), "{text}");
    let out = sb
        .hrr()
        .current_dir(sb.path().join("proj/sub"))
        .args(["config", "get", "replay.gpu"])
        .output()
        .unwrap();
    assert_eq!(stdout(&out), "3\n", "the project file beats the user file");
    let out = sb
        .hrr()
        .current_dir(sb.path().join("proj/sub"))
        .args(["-c", "replay.gpu=9", "config", "get", "replay.gpu"])
        .output()
        .unwrap();
    assert_eq!(stdout(&out), "9\n", "-c beats every file");
}

#[test]
fn config_errors_name_file_line_and_key() {
    let sb = Sandbox::new();
    sb.write("site.toml", "[replay]\n# comment\ntimeot = \"5m\"\n");
    let out = sb.hrr().args(["config", "show"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let site = sb.site_file();
    assert_eq!(
        stderr(&out),
        format!(
            "error: {}:3: unknown key 'replay.timeot' (did you mean 'replay.timeout'?); `hrr config show` lists every key\n",
            site.display()
        )
    );
    sb.write("site.toml", "[docker]\nmount_clr = \"yes please\"\n");
    let err = stderr(&sb.hrr().args(["config", "show"]).output().unwrap());
    assert!(
        err.contains("site.toml:2: key 'docker.mount_clr': expected true or false"),
        "{err}"
    );
    sb.write("site.toml", "");
    let out = sb
        .hrr()
        .args(["--profile", "nope", "config", "show"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("unknown profile 'nope' (selected by --profile)"));
}

#[test]
fn profile_from_env_overlays_and_show_says_which() {
    let sb = Sandbox::new();
    sb.write(
        "site.toml",
        "[docker]\nimage = \"base\"\n[profile.vllm.docker]\nimage = \"rocm/vllm:latest\"\n",
    );
    let out = sb
        .hrr()
        .env("HRR_PROFILE", "vllm")
        .args(["config", "show"])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(text.starts_with("# profile: vllm\n"), "{text}");
    assert!(text.contains("image = \"rocm/vllm:latest\""), "{text}");
}

#[test]
fn path_lists_files_and_whether_they_exist() {
    let sb = Sandbox::new();
    sb.write("site.toml", "");
    let text = stdout(&sb.hrr().args(["config", "path"]).output().unwrap());
    assert!(
        text.contains(&format!("site      exists   {}", sb.site_file().display())),
        "{text}"
    );
    let user = sb.user_dir().join("config.toml");
    assert!(
        text.contains(&format!("user      missing  {}", user.display())),
        "{text}"
    );
}

#[test]
fn init_writes_a_starter_once_and_refuses_to_overwrite() {
    let sb = Sandbox::new();
    let out = sb
        .hrr()
        .args(["config", "init", "--project"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let file = sb.path().join(".hrr/config.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("# timeout = \"30m\""), "{text}");
    let out = sb
        .hrr()
        .args(["config", "get", "replay.timeout"])
        .output()
        .unwrap();
    assert_eq!(stdout(&out), "30m\n", "the starter changes nothing");
    let out = sb
        .hrr()
        .args(["config", "init", "--project"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("already exists"));
}

#[test]
fn init_scripts_writes_the_embedded_triage_lua_where_triage_finds_it() {
    let sb = Sandbox::new();
    let embedded =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/triage.lua"))
            .unwrap();
    let out = sb
        .hrr()
        .args(["config", "init", "--scripts"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let user = sb.path().join("xdg/hrr/scripts/triage.lua");
    assert_eq!(std::fs::read_to_string(&user).unwrap(), embedded);
    assert!(stderr(&out).contains(&user.display().to_string()));
    let listed = stdout(&sb.hrr().args(["-v", "--list"]).output().unwrap());
    assert!(
        listed.contains(&format!("triage         {}", user.display())),
        "the written copy is the triage.lua that runs: {listed}"
    );
    // Never over an existing file: an edited copy stays as it is.
    std::fs::write(&user, "return 0\n").unwrap();
    let out = sb
        .hrr()
        .args(["config", "init", "--scripts"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&user).unwrap(), "return 0\n");
    // --project writes the project's scripts directory.
    let out = sb
        .hrr()
        .args(["config", "init", "--scripts", "--project"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let project = sb.path().join(".hrr/scripts/triage.lua");
    assert_eq!(std::fs::read_to_string(project).unwrap(), embedded);
    // The site layer has no scripts directory.
    let out = sb
        .hrr()
        .args(["config", "init", "--scripts", "--site"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn init_scripts_refuses_a_project_inside_an_archive() {
    let sb = Sandbox::new();
    let archive = sb.path().join("cap.hrr/pid-4242");
    hrr_testkit::synth::clean_process()
        .write(&sb.path().join("cap.hrr"))
        .unwrap();
    assert!(archive.join("events.bin").is_file());
    let out = sb
        .hrr()
        .current_dir(&archive)
        .args(["config", "init", "--scripts", "--project"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("never writes into an archive"),
        "{}",
        stderr(&out)
    );
    assert!(!archive.join(".hrr").exists());
}

#[test]
fn the_shipped_site_example_is_valid_and_each_profile_applies() {
    let sb = Sandbox::new();
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/config/site.example.toml"
    ))
    .unwrap();
    sb.write("site.toml", &example);
    let get = |profile: &str, key: &str| {
        let out = sb
            .hrr()
            .args(["--profile", profile, "config", "get", key])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out).trim().to_string()
    };
    assert_eq!(get("mi300x", "replay.mode"), "native");
    assert_eq!(get("mi300x", "rocm.path"), "/opt/rocm-7.2.0");
    assert_eq!(get("vllm", "replay.mode"), "docker");
    assert_eq!(get("vllm", "docker.image"), "rocm/vllm:latest");
    assert_eq!(get("vllm", "replay.timeout"), "1h");
    assert_eq!(
        get("mi300x", "replay.timeout"),
        "45m",
        "shared settings apply under every profile"
    );
}

#[test]
fn set_flags_before_and_after_the_subcommand_all_apply() {
    let sb = Sandbox::new();
    let out = sb
        .hrr()
        .args([
            "-c",
            "replay.gpu=1",
            "config",
            "show",
            "-c",
            "replay.sync=event",
        ])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(
        text.contains("\ngpu = 1\n") && text.contains("\nsync = \"event\"\n"),
        "{text}"
    );
}
