//! `hrr <command> --help` puts the command first: its own options, then the
//! flags every command takes under `Global options`, then examples whose
//! flags are all the command's own.

mod common;

use common::{stdout, Sandbox};

const COMMANDS: [&[&str]; 9] = [
    &["triage"],
    &["archive", "info"],
    &["archive", "events"],
    &["preflight"],
    &["playback"],
    &["replay"],
    &["classify"],
    &["render"],
    &["run"],
];

fn help(sb: &Sandbox, command: &[&str]) -> String {
    let out = sb.hrr().args(command).arg("--help").output().unwrap();
    assert!(out.status.success(), "{command:?} --help");
    stdout(&out)
}

#[test]
fn a_commands_own_options_come_before_the_global_ones() {
    let sb = Sandbox::new();
    let text = help(&sb, &["triage"]);
    let own = text.find("--no-replay").expect("triage's own option");
    let heading = text
        .find("\nGlobal options:\n")
        .expect("a Global options heading");
    let global = text.find("--config <FILE>").expect("a global option");
    assert!(own < heading && heading < global, "{text}");
}

#[test]
fn every_command_ends_with_examples_that_use_its_own_flags() {
    let sb = Sandbox::new();
    for command in COMMANDS {
        let text = help(&sb, command);
        let examples = text
            .split_once("\nExample")
            .unwrap_or_else(|| panic!("{command:?} --help has no example"))
            .1;
        let prefix = format!("hrr {}", command.join(" "));
        let lines: Vec<&str> = examples
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("hrr "))
            .collect();
        assert!(!lines.is_empty(), "{command:?}: no example line");
        for line in lines {
            assert!(line.starts_with(&prefix), "{command:?}: example `{line}`");
            let own_flags = line.split(" -- ").next().unwrap();
            for flag in own_flags.split_whitespace().filter(|w| w.starts_with("--")) {
                assert!(
                    text.contains(&format!("{flag} ")) || text.contains(&format!("{flag}\n")),
                    "{command:?}: example flag {flag} is not an option of the command"
                );
            }
        }
    }
}
