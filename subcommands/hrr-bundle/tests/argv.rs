//! The dispatcher runs `hrr-bundle bundle args…`; a user may run
//! `hrr-bundle args…` directly. Both forms behave the same.
#![cfg(unix)]

mod common;

use common::{stderr, stdout, Fixture};

#[test]
fn pack_and_verify_work_with_and_without_the_leading_subcommand_name() {
    let fx = Fixture::new();
    fx.process_dir("pid-1234", 1);
    for (lead, file) in [(Some("bundle"), "a.tar.zst"), (None, "b.tar.zst")] {
        let mut pack = fx.bundle();
        pack.args(lead).args(["pid-1234", "-o", file]);
        let out = pack.output().unwrap();
        assert!(out.status.success(), "{lead:?}: {}", stderr(&out));
        let mut verify = fx.bundle();
        verify.args(lead).args(["verify", file]);
        let out = verify.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{lead:?}: {}", stdout(&out));
        assert!(
            stdout(&out).starts_with("ok: 5 files, "),
            "{}",
            stdout(&out)
        );
    }
}

#[test]
fn help_works_both_ways_and_names_the_command_as_invoked() {
    let fx = Fixture::new();
    let out = fx.bundle().args(["bundle", "--help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(
        text.contains("Usage: hrr bundle [OPTIONS] <ARCHIVE>"),
        "{text}"
    );
    for flag in [
        "--finding",
        "--log",
        "--output",
        "--force",
        "--triage",
        "verify",
    ] {
        assert!(text.contains(flag), "{flag} missing from:\n{text}");
    }
    let out = fx.bundle().arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("Usage: hrr-bundle [OPTIONS] <ARCHIVE>"));
    let out = fx
        .bundle()
        .args(["bundle", "verify", "--help"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("Usage: hrr bundle verify <BUNDLE>"));
}

#[test]
fn a_bad_argument_exits_1_and_finding_conflicts_with_triage() {
    let fx = Fixture::new();
    let out = fx.bundle().args(["bundle", "--bogus"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("error: "), "{}", stderr(&out));
    let out = fx
        .bundle()
        .args(["pid-1", "--finding", "f.json", "--triage"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("cannot be used with"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn version_is_the_crate_version() {
    let fx = Fixture::new();
    let out = fx.bundle().arg("--version").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out),
        format!("hrr-bundle {}\n", env!("CARGO_PKG_VERSION"))
    );
}
