//! `hrr completions` and `hrr man`.

mod common;

#[cfg(unix)]
use common::script;
use common::{stdout, Sandbox};

#[cfg(unix)]
#[test]
fn completions_generate_for_every_shell_and_include_runtime_commands() {
    let sb = Sandbox::new();
    sb.write("xdg/hrr/scripts/flakiness.lua", "return 0\n");
    let bin = sb.path().join("bin");
    script(&bin, "hrr-bundle", "#!/bin/sh\n");
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = sb
            .hrr()
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}");
        let text = stdout(&out);
        for name in ["triage", "flakiness", "bundle"] {
            assert!(text.contains(name), "{shell} completion lacks {name}");
        }
    }
}

#[test]
fn man_pages_render_roff() {
    let sb = Sandbox::new();
    let text = stdout(&sb.hrr().arg("man").output().unwrap());
    assert!(text.contains(".TH hrr 1"), "{text}");
    let text = stdout(&sb.hrr().args(["man", "triage"]).output().unwrap());
    assert!(text.contains(".TH hrr-triage 1"), "{text}");
    assert!(text.contains("exit\\-code"), "{text}");
    let out = sb.hrr().args(["man", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
}
