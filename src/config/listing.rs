//! The config as people read it: the effective settings listed as TOML
//! (`hrr config show`), and the starter file `hrr config init` writes.

use std::fmt::Write as _;

use super::{schema, Config, DEFAULT_TOML};

impl Config {
    /// The effective config as TOML, grouped by section; with `origin`, each
    /// key is followed by a comment naming where its value came from. Unset
    /// keys are listed as comments so every key is visible (`hrr config show`).
    pub fn listing(&self, origin: bool) -> String {
        let mut out = String::new();
        if let Some(p) = self.profile() {
            let _ = writeln!(out, "# profile: {p}");
        }
        let mut section = "";
        for spec in schema::KEYS {
            let (sec, name) = spec.key.split_once('.').expect("dotted key");
            if sec != section {
                let _ = writeln!(out, "{}[{sec}]", if section.is_empty() { "" } else { "\n" });
                section = sec;
            }
            match self.entry(spec.key) {
                Some(e) if origin => {
                    let _ = writeln!(out, "{name} = {}  # {}", e.value, e.origin);
                }
                Some(e) => {
                    let _ = writeln!(out, "{name} = {}", e.value);
                }
                None => {
                    let _ = writeln!(out, "# {name} is unset");
                }
            }
        }
        let aliases = self.aliases();
        if !aliases.is_empty() {
            out.push_str("\n[alias]\n");
            for (name, alias) in aliases {
                let value = toml::Value::String(alias.expansion);
                if origin {
                    let _ = writeln!(out, "{name} = {value}  # {}", alias.origin);
                } else {
                    let _ = writeln!(out, "{name} = {value}");
                }
            }
        }
        out
    }
}

/// The default config with every active line commented out.
pub fn starter_text() -> String {
    let mut out = String::from("# hrr config: uncomment and edit what you need.\n");
    for line in DEFAULT_TOML.lines().skip_while(|l| l.starts_with('#')) {
        let t = line.trim_start();
        if t.is_empty() || t.starts_with('#') {
            out.push_str(line);
        } else {
            out.push_str("# ");
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starter_changes_nothing_and_show_round_trips() {
        assert!(crate::config::schema::KEYS.len() > 20);
        let parsed = toml::from_str::<toml::Table>(&starter_text()).unwrap();
        assert!(parsed.is_empty(), "starter must set nothing: {parsed:?}");
        let c = Config::with_overrides(&["replay.gpu=2"]).unwrap();
        let shown = c.listing(false);
        let t: toml::Table = toml::from_str(&shown).unwrap();
        assert_eq!(t["replay"]["gpu"].as_integer(), Some(2));
        assert!(shown.contains("# path is unset"));
        assert!(c.listing(true).contains("gpu = 2  # flag -c replay.gpu=2"));
    }
}
