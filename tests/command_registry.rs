//! One command registry (DESIGN §9): an alias, a Lua workflow and an
//! external are seen alike by `hrr <name>`, `hrr --list`, the completion
//! scripts, `hrr help` and the did-you-mean hint, and a name that several
//! hold is the same winner in all five.

#![cfg(unix)]

mod common;

use common::{script, stderr, stdout, Sandbox};

/// `hrr` with `bin/` of the sandbox first on `PATH`.
fn hrr(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    let bin = sb.path().join("bin");
    sb.hrr()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .args(args)
        .output()
        .unwrap()
}

/// The descriptions fish completes `hrr <name>` with, one per entry.
fn completions_of(sb: &Sandbox, name: &str) -> Vec<String> {
    let out = hrr(sb, &["completions", "fish"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let entry = format!("__fish_hrr_needs_command\" -f -a \"{name}\" -d '");
    stdout(&out)
        .lines()
        .filter_map(|l| l.split_once(&entry))
        .map(|(_, about)| about.trim_end_matches('\'').to_string())
        .collect()
}

/// `hrr -v --list`, checked to hold each of `lines`.
fn listed_with(sb: &Sandbox, lines: &[String]) -> String {
    let listed = stdout(&hrr(sb, &["-v", "--list"]));
    for line in lines {
        assert!(listed.contains(line), "--list -v lacks {line:?}: {listed}");
    }
    listed
}

fn typo(sb: &Sandbox, word: &str) -> String {
    let out = hrr(sb, &[word]);
    assert_eq!(out.status.code(), Some(1), "{word}");
    stderr(&out)
}

#[test]
fn an_alias_a_workflow_and_an_external_reach_every_consumer_with_their_origin() {
    let sb = Sandbox::new();
    let workflow = sb.write(
        "xdg/hrr/scripts/sweep.lua",
        "-- Usage: hrr sweep <pid-dir>\n-- Replays once per GPU.\nhrr.out('sweep ran ' .. table.concat(hrr.args, ' ') .. '\\n')\nreturn 0\n",
    );
    sb.write(
        "site.toml",
        "# site\n[alias]\nquick = \"config get replay.mode\"\n",
    );
    let external = script(
        &sb.path().join("bin"),
        "hrr-notes",
        "#!/bin/sh\necho \"notes got: $*\"\n",
    );

    let site = sb.site_file();
    listed_with(
        &sb,
        &[
            format!(
                "    quick          = config get replay.mode  [{}:3]\n",
                site.display()
            ),
            format!("    sweep          {}\n", workflow.display()),
            format!("    notes          {}\n", external.display()),
        ],
    );

    assert_eq!(
        completions_of(&sb, "quick"),
        ["alias for `hrr config get replay.mode`"]
    );
    assert_eq!(
        completions_of(&sb, "sweep"),
        [format!(
            "Lua workflow ({})",
            workflow.parent().unwrap().display()
        )]
    );
    assert_eq!(
        completions_of(&sb, "notes"),
        [format!("external command {}", external.display())]
    );

    for (word, meant) in [("quik", "quick"), ("sweeb", "sweep"), ("note", "notes")] {
        assert_eq!(
            typo(&sb, word),
            format!("error: no such command: '{word}'; did you mean '{meant}'? (`hrr --list` shows every command)\n")
        );
    }

    let help = stdout(&hrr(&sb, &["help", "sweep"]));
    assert_eq!(help, "Usage: hrr sweep <pid-dir>\nReplays once per GPU.\n");
    let help = stdout(&hrr(&sb, &["help", "quick"]));
    assert!(
        help.starts_with(&format!(
            "quick: alias for `hrr config get replay.mode` ({}:3)\n\n",
            site.display()
        )),
        "{help}"
    );
    assert!(
        help.contains("Usage: hrr config get [OPTIONS] <KEY>"),
        "{help}"
    );
    assert_eq!(
        stdout(&hrr(&sb, &["help", "notes"])),
        "notes got: notes --help\n"
    );

    assert_eq!(stdout(&hrr(&sb, &["sweep", "a", "b"])), "sweep ran a b\n");
    assert_eq!(stdout(&hrr(&sb, &["quick"])), "auto\n");
    assert_eq!(stdout(&hrr(&sb, &["notes", "x"])), "notes got: notes x\n");
}

#[test]
fn a_name_that_several_hold_is_one_command_everywhere_and_the_winner_runs() {
    let sb = Sandbox::new();
    let workflow = sb.write(
        "xdg/hrr/scripts/dup.lua",
        "-- dup, the workflow\nhrr.out('the workflow ran\\n')\nreturn 0\n",
    );
    let config_workflow = sb.write("xdg/hrr/scripts/config.lua", "hrr.out('hijacked')\n");
    let bin = sb.path().join("bin");
    let external = script(&bin, "hrr-dup", "#!/bin/sh\necho the external ran\n");
    let config_external = script(&bin, "hrr-config", "#!/bin/sh\necho hijacked\n");
    sb.write("site.toml", "[alias]\ndup = \"config get replay.sync\"\n");

    // The alias wins over the workflow and the external.
    listed_with(
        &sb,
        &[
            format!(
                "    dup            = config get replay.sync  [{}:2]\n",
                sb.site_file().display()
            ),
            format!(
                "    dup            {}  (hidden by the alias of the same name)\n",
                workflow.display()
            ),
            format!(
                "    dup            {}  (hidden by the alias of the same name)\n",
                external.display()
            ),
            format!(
                "    config         {}  (hidden by the builtin of the same name)\n",
                config_workflow.display()
            ),
            format!(
                "    config         {}  (hidden by the builtin of the same name)\n",
                config_external.display()
            ),
        ],
    );
    assert_eq!(
        completions_of(&sb, "dup"),
        ["alias for `hrr config get replay.sync`"]
    );
    assert_eq!(
        completions_of(&sb, "config"),
        ["Inspect and create config files"]
    );
    let help = stdout(&hrr(&sb, &["help", "dup"]));
    assert!(
        help.starts_with("dup: alias for `hrr config get replay.sync` ("),
        "{help}"
    );
    assert_eq!(stdout(&hrr(&sb, &["dup"])), "launch\n");
    let help = stdout(&hrr(&sb, &["help", "config"]));
    assert!(
        help.contains("Usage: hrr config [OPTIONS] <COMMAND>"),
        "{help}"
    );

    // Without the alias, the workflow wins over the external.
    sb.write("site.toml", "");
    let listed = listed_with(
        &sb,
        &[format!(
            "    dup            {}  (hidden by the Lua workflow of the same name)\n",
            external.display()
        )],
    );
    assert!(!listed.contains("Aliases:"), "{listed}");
    assert_eq!(
        completions_of(&sb, "dup"),
        [format!(
            "Lua workflow ({})",
            workflow.parent().unwrap().display()
        )]
    );
    assert_eq!(stdout(&hrr(&sb, &["help", "dup"])), "dup, the workflow\n");
    assert_eq!(stdout(&hrr(&sb, &["dup"])), "the workflow ran\n");
}
