//! One configuration layer: a TOML file, the legacy environment, or `-c`
//! flags, flattened into dotted keys that remember where they came from.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context as _};

use super::schema::{self, ALIAS_PREFIX, PROFILE_KEY};

/// Where a configuration value came from, for `config show --origin` and for
/// error messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The defaults embedded in the binary (`config/default.toml`).
    Default,
    /// A file, with the 1-based line of the key.
    File {
        /// The file.
        path: PathBuf,
        /// The line of the key.
        line: usize,
    },
    /// A legacy environment variable of the upstream scripts.
    Env(String),
    /// A command-line flag (`-c key=value`, `--gpu`, …).
    Flag(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::File { path, line } => write!(f, "{}:{line}", path.display()),
            Origin::Env(name) => write!(f, "env {name} (legacy)"),
            Origin::Flag(text) => write!(f, "flag {text}"),
        }
    }
}

/// One key set by one layer.
#[derive(Clone, Debug)]
pub struct Setting {
    /// Dotted key (`replay.gpu`, `alias.t`, `profile`).
    pub key: String,
    /// The checked value.
    pub value: toml::Value,
    /// Where it came from.
    pub origin: Origin,
    /// The profile whose table held it, if any.
    pub profile: Option<String>,
}

/// Parses a config file's text into settings. Syntax errors, unknown keys and
/// wrong types name the file, the line and the key.
pub fn parse_file(path: &Path, text: &str) -> anyhow::Result<Vec<Setting>> {
    let doc = toml_edit::Document::parse(text).map_err(|e| {
        let line = e.span().map_or(1, |s| line_of(text, s.start));
        anyhow!(
            "{}:{line}: TOML syntax error: {}",
            path.display(),
            e.message()
        )
    })?;
    let mut out = Vec::new();
    let mut walker = Walker {
        path,
        text,
        out: &mut out,
    };
    walker.table(doc.as_table(), "", None)?;
    Ok(out)
}

struct Walker<'a> {
    path: &'a Path,
    text: &'a str,
    out: &'a mut Vec<Setting>,
}

impl Walker<'_> {
    fn line(&self, key: &toml_edit::Key) -> usize {
        key.span().map_or(1, |s| line_of(self.text, s.start))
    }

    fn table(
        &mut self,
        table: &dyn toml_edit::TableLike,
        prefix: &str,
        profile: Option<&str>,
    ) -> anyhow::Result<()> {
        for (name, item) in table.iter() {
            let (key_repr, _) = table.get_key_value(name).expect("key from iter");
            let line = self.line(key_repr);
            let dotted = format!("{prefix}{name}");
            if prefix.is_empty() && profile.is_none() && name == "profile" && item.is_table_like() {
                for (pname, pitem) in item.as_table_like().expect("checked").iter() {
                    let ptable = pitem.as_table_like().ok_or_else(|| {
                        anyhow!(
                            "{}:{line}: [profile.{pname}] must be a table of settings",
                            self.path.display()
                        )
                    })?;
                    self.table(ptable, "", Some(pname))?;
                }
                continue;
            }
            if let Some(inner) = item.as_table_like() {
                self.table(inner, &format!("{dotted}."), profile)?;
                continue;
            }
            let value = item.as_value().map(to_toml).ok_or_else(|| {
                anyhow!(
                    "{}:{line}: key '{dotted}': unsupported value",
                    self.path.display()
                )
            })?;
            let origin = Origin::File {
                path: self.path.to_path_buf(),
                line,
            };
            let value = check_key(&dotted, value, profile.is_some())
                .with_context(|| format!("{}:{line}", self.path.display()))?;
            self.out.push(Setting {
                key: dotted,
                value,
                origin,
                profile: profile.map(str::to_string),
            });
        }
        Ok(())
    }
}

/// Checks one dotted key and its value; the error names the key.
pub fn check_key(key: &str, value: toml::Value, in_profile: bool) -> anyhow::Result<toml::Value> {
    if key == PROFILE_KEY && !in_profile {
        return match value {
            toml::Value::String(_) => Ok(value),
            other => bail!("key 'profile': expected a profile name, found {other}"),
        };
    }
    if let Some(name) = key.strip_prefix(ALIAS_PREFIX) {
        if name.is_empty() || name.contains('.') {
            bail!("key '{key}': an alias name is one word");
        }
        return match value {
            toml::Value::String(s) if !s.trim().is_empty() => Ok(toml::Value::String(s)),
            other => bail!("key '{key}': expected a command line such as \"triage --no-replay\", found {other}"),
        };
    }
    let spec = schema::spec(key).ok_or_else(|| {
        let hint = crate::suggest::closest(key, schema::KEYS.iter().map(|k| k.key))
            .map(|s| format!(" (did you mean '{s}'?)"))
            .unwrap_or_default();
        anyhow!("unknown key '{key}'{hint}; `hrr config show` lists every key")
    })?;
    schema::check(spec.kind, value).with_context(|| format!("key '{key}'"))
}

/// The 1-based line holding byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn to_toml(value: &toml_edit::Value) -> toml::Value {
    use toml_edit::Value as E;
    match value {
        E::String(s) => toml::Value::String(s.value().clone()),
        E::Integer(i) => toml::Value::Integer(*i.value()),
        E::Float(f) => toml::Value::Float(*f.value()),
        E::Boolean(b) => toml::Value::Boolean(*b.value()),
        E::Datetime(d) => toml::Value::String(d.value().to_string()),
        E::Array(a) => toml::Value::Array(a.iter().map(to_toml).collect()),
        E::InlineTable(t) => {
            toml::Value::Table(t.iter().map(|(k, v)| (k.to_string(), to_toml(v))).collect())
        }
    }
}

/// The settings of the legacy environment names (DESIGN §4 table), read
/// through `env` so tests can supply their own environment.
pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> anyhow::Result<Vec<Setting>> {
    let mut out = Vec::new();
    for spec in schema::KEYS {
        let Some((name, raw)) = spec
            .legacy_env
            .iter()
            .find_map(|n| env(n).filter(|v| !v.is_empty()).map(|v| (*n, v)))
        else {
            continue;
        };
        let value = schema::check(spec.kind, toml::Value::String(raw))
            .with_context(|| format!("environment variable {name} (sets {})", spec.key))?;
        out.push(Setting {
            key: spec.key.to_string(),
            value,
            origin: Origin::Env(name.to_string()),
            profile: None,
        });
    }
    Ok(out)
}

/// Parses one `-c key=value`: the value is read as a TOML value when it is
/// one (`true`, `3`, `["a"]`), else taken as a plain string.
pub fn from_override(text: &str, flag: &str) -> anyhow::Result<Setting> {
    let (key, raw) = text
        .split_once('=')
        .ok_or_else(|| anyhow!("{flag} {text}: expected key=value, e.g. -c replay.gpu=1"))?;
    let key = key.trim();
    let raw = raw.trim();
    let value = toml::from_str::<toml::Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()));
    let value = check_key(key, value, false).with_context(|| format!("{flag} {text}"))?;
    Ok(Setting {
        key: key.to_string(),
        value,
        origin: Origin::Flag(format!("{flag} {text}")),
        profile: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_errors_name_file_line_and_key() {
        let p = Path::new("/etc/hrr/config.toml");
        let err = parse_file(p, "[replay]\ntimeout = \"30m\"\ngpux = 1\n").unwrap_err();
        let msg = format!("{err:#}");
        assert!(msg.contains("/etc/hrr/config.toml:3"), "{msg}");
        assert!(msg.contains("unknown key 'replay.gpux'"), "{msg}");
        assert!(msg.contains("did you mean 'replay.gpu'"), "{msg}");

        let err = parse_file(p, "[replay]\n\ngpu = true\n").unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            msg.contains(":3") && msg.contains("key 'replay.gpu'"),
            "{msg}"
        );

        let err = parse_file(p, "[replay\n").unwrap_err();
        assert!(format!("{err:#}").contains("config.toml:1: TOML syntax error"));
    }

    #[test]
    fn profiles_and_aliases_are_flattened() {
        // A file either selects a profile (`profile = "…"`) or defines
        // `[profile.NAME]` tables: TOML does not allow both in one file.
        let s = parse_file(Path::new("u.toml"), "profile = \"lab\"\n").unwrap();
        assert_eq!(
            (s[0].key.as_str(), s[0].value.as_str()),
            ("profile", Some("lab"))
        );
        let text = "[alias]\nt = \"triage --no-replay\"\n[profile.lab.replay]\ngpu = 2\n";
        let s = parse_file(Path::new("c.toml"), text).unwrap();
        let keys: Vec<_> = s
            .iter()
            .map(|s| (s.key.as_str(), s.profile.as_deref()))
            .collect();
        assert_eq!(keys, [("alias.t", None), ("replay.gpu", Some("lab"))]);
        assert_eq!(
            s[1].origin,
            Origin::File {
                path: "c.toml".into(),
                line: 4
            }
        );
    }

    #[test]
    fn overrides_parse_toml_values_or_strings() {
        assert_eq!(
            from_override("replay.gpu=1", "-c").unwrap().value,
            toml::Value::Integer(1)
        );
        assert_eq!(
            from_override("docker.image=rocm/vllm:latest", "-c")
                .unwrap()
                .value,
            toml::Value::String("rocm/vllm:latest".into())
        );
        assert!(from_override("replay.gpu", "-c").is_err());
    }
}
