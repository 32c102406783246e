//! The agent skill (`skills/decode-and-triage/SKILL.md`) cannot drift from
//! the CLI: every command in its `sh` code blocks is run against the example
//! archive, metadata-only, and must exit as the skill says (`# exit: N`,
//! else 0). Commands that need what this host lacks are marked
//! `# not run here: gpu|docker|windows` and are counted, not run.
#![cfg(unix)]

mod common;

use std::path::Path;

use common::{stderr, stdout, Sandbox};

const SKILL: &str = include_str!("../skills/decode-and-triage/SKILL.md");
const NOT_RUN_REASONS: [&str; 3] = ["gpu", "docker", "windows"];

/// One command line of a code block, with what the skill says of it.
struct SkillCommand {
    line: String,
    exit: i32,
    not_run: Option<String>,
}

/// The commands of every fenced `sh` block, with their markers.
fn skill_commands() -> Vec<SkillCommand> {
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in SKILL.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            in_sh = !in_sh && t == "```sh";
            continue;
        }
        if !in_sh || t.is_empty() || t.starts_with('#') {
            continue;
        }
        let (cmd, comment) = match t.find(" #") {
            Some(i) => (t[..i].trim(), t[i + 2..].trim()),
            None => (t, ""),
        };
        let exit = comment
            .strip_prefix("exit:")
            .map(|n| n.trim().parse().expect("an exit code after `# exit:`"))
            .unwrap_or(0);
        let not_run = comment.strip_prefix("not run here:").map(|r| {
            let reason = r.split_whitespace().next().unwrap_or("").to_string();
            assert!(
                NOT_RUN_REASONS.contains(&reason.as_str()),
                "`{t}`: a command is not run only for {NOT_RUN_REASONS:?}"
            );
            reason
        });
        out.push(SkillCommand {
            line: cmd.to_string(),
            exit,
            not_run,
        });
    }
    out
}

#[test]
fn every_command_of_the_skill_exits_as_it_says() {
    let sb = Sandbox::new();
    let archive = sb.path().join("capture.hrr");
    common::copy_example(&archive);
    let before = common::tree_snapshot(&archive);
    let pid_dir = archive.join("pid-4243");
    // No GPU device, whatever this host has: every run is metadata-only.
    sb.write("site.toml", "[replay]\nkfd = \"/nonexistent/kfd\"\n");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_hrr")).parent().unwrap();
    let hermetic = sb.hrr_process();

    let commands = skill_commands();
    let mut ran = 0;
    for c in &commands {
        assert!(
            c.line.starts_with("hrr "),
            "not an hrr command: `{}`",
            c.line
        );
        if c.not_run.is_some() {
            continue;
        }
        let line = c
            .line
            .replace("<archive>", &archive.to_string_lossy())
            .replace("<pid-dir>", &pid_dir.to_string_lossy());
        assert!(!line.contains('<'), "a placeholder left in `{line}`");
        let out = std::process::Command::new("/bin/sh")
            .env_clear()
            .envs(hermetic.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .env("PATH", format!("{}:/usr/bin:/bin", bin_dir.display()))
            .current_dir(sb.path())
            .args(["-c", &line])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(c.exit),
            "`{}` exited {:?}, the skill says {}\nstderr: {}",
            c.line,
            out.status.code(),
            c.exit,
            stderr(&out)
        );
        if c.exit == 0 {
            assert!(
                !stdout(&out).trim().is_empty(),
                "`{}` printed nothing",
                c.line
            );
        }
        ran += 1;
    }
    assert!(ran >= 8, "only {ran} commands of the skill ran");
    let not_run: Vec<_> = commands
        .iter()
        .filter_map(|c| c.not_run.as_deref())
        .collect();
    assert!(
        not_run.contains(&"gpu") && not_run.contains(&"docker"),
        "{not_run:?}"
    );
    assert_eq!(
        common::tree_snapshot(&archive),
        before,
        "the skill's commands changed the archive"
    );
}

#[test]
fn the_skill_states_the_rules_an_agent_must_keep() {
    for rule in [
        "No kernel next to PASS",
        "UNKNOWN is said in words",
        "A crashed replay is not the user's bug",
        "ATen faults need the original signature",
        "Never modify the archive",
        "--repair",
        "one build attempt",
        "--no-replay",
    ] {
        assert!(SKILL.contains(rule), "the skill no longer says: {rule}");
    }
}
