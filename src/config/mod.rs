//! Layered configuration: embedded defaults, site, user, project, explicit
//! file, legacy environment, profile, `-c` flags (DESIGN §4).

mod layer;
mod listing;
pub mod project;
pub mod schema;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, Context as _};

pub use layer::Origin;
use layer::Setting;
pub use listing::starter_text;
pub use project::Project;

/// The embedded defaults, also printed by `hrr config init`.
pub const DEFAULT_TOML: &str = include_str!("../../config/default.toml");

/// Which kind of config file a path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileRole {
    /// `/etc/hrr/config.toml` (or `HRR_SITE_CONFIG`).
    Site,
    /// `~/.config/hrr/config.toml`.
    User,
    /// `.hrr/config.toml` of the project ([`Project`]).
    Project,
    /// `HRR_CONFIG` or `--config`.
    Explicit,
}

/// A config file `hrr` consulted.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ConfigFile {
    /// Its layer.
    pub role: FileRole,
    /// Its path.
    pub path: PathBuf,
    /// Whether it existed (and so was read).
    pub exists: bool,
}

/// What the command line says about config, before any file is read.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// `--config FILE`.
    pub config_file: Option<PathBuf>,
    /// `--profile NAME`.
    pub profile: Option<String>,
    /// `-c key=value`, in order.
    pub overrides: Vec<String>,
}

/// One effective value and where it came from.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The value.
    pub value: toml::Value,
    /// Its origin.
    pub origin: Origin,
}

/// A user alias: `[alias] name = "expansion"`.
#[derive(Clone, Debug)]
pub struct Alias {
    /// The command line it stands for, split on whitespace when run.
    pub expansion: String,
    /// Where it was set.
    pub origin: Origin,
}

/// The effective configuration.
#[derive(Clone, Debug)]
pub struct Config {
    values: BTreeMap<String, Entry>,
    files: Vec<ConfigFile>,
    project: Project,
    profile: Option<String>,
}

impl Config {
    /// Loads every layer from the real environment and file system.
    pub fn load(opts: &LoadOptions) -> anyhow::Result<Config> {
        let env = |name: &str| std::env::var(name).ok();
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Self::load_with(opts, &env, &cwd)
    }

    /// Built-in defaults plus `-c`-style overrides only: no files, no
    /// environment. For tests and library callers.
    pub fn with_overrides(overrides: &[&str]) -> anyhow::Result<Config> {
        let mut config = Self::from_layers(Vec::new(), Vec::new(), None)?;
        for o in overrides {
            config.apply(layer::from_override(o, "-c")?);
        }
        Ok(config)
    }

    fn load_with(
        opts: &LoadOptions,
        env: &dyn Fn(&str) -> Option<String>,
        cwd: &Path,
    ) -> anyhow::Result<Config> {
        let project = Project::discover(cwd);
        let files = consulted_files(opts, env, &project, cwd);
        let mut settings = Vec::new();
        for file in &files {
            if !file.exists {
                if file.role == FileRole::Explicit {
                    let what = match crate::user_input::FileKind::of(&file.path) {
                        Some(kind) => format!("is {}, not a file", kind.describe()),
                        None => "does not exist".to_string(),
                    };
                    return Err(anyhow!(
                        "config file {} {what} (named by {})",
                        file.path.display(),
                        if opts.config_file.is_some() {
                            "--config"
                        } else {
                            "HRR_CONFIG"
                        }
                    ));
                }
                continue;
            }
            let text = std::fs::read_to_string(&file.path)
                .with_context(|| format!("cannot read config file {}", file.path.display()))?;
            settings.extend(layer::parse_file(&file.path, &text)?);
        }
        settings.extend(layer::from_env(env)?);
        let selected = match (&opts.profile, env("HRR_PROFILE").filter(|p| !p.is_empty())) {
            (Some(p), _) => Some((p.clone(), "--profile".to_string())),
            (None, Some(p)) => Some((p, "HRR_PROFILE".to_string())),
            (None, None) => None,
        };
        let mut config = Self::from_layers(settings, files, selected)?;
        config.project = project;
        for o in &opts.overrides {
            config.apply(layer::from_override(o, "-c")?);
        }
        Ok(config)
    }

    fn from_layers(
        settings: Vec<Setting>,
        files: Vec<ConfigFile>,
        selected: Option<(String, String)>,
    ) -> anyhow::Result<Config> {
        let path = Path::new("<built-in default.toml>");
        let defaults = layer::parse_file(path, DEFAULT_TOML).expect("embedded defaults are valid");
        let mut config = Config {
            values: BTreeMap::new(),
            files,
            project: Project::default(),
            profile: None,
        };
        let (profiled, plain): (Vec<_>, Vec<_>) =
            settings.into_iter().partition(|s| s.profile.is_some());
        for mut s in defaults.into_iter().chain(plain) {
            let origin = if matches!(&s.origin, Origin::File { path: p, .. } if p == path) {
                // Windows has no GPU device node to check before a replay.
                if cfg!(windows) && s.key == "replay.kfd" {
                    s.value = toml::Value::String(String::new());
                }
                Origin::Default
            } else {
                s.origin.clone()
            };
            config.apply(Setting { origin, ..s });
        }
        let selected = selected.or_else(|| {
            let e = config.values.get(schema::PROFILE_KEY)?;
            Some((e.value.as_str()?.to_string(), e.origin.to_string()))
        });
        if let Some((name, from)) = selected {
            let mine: Vec<_> = profiled
                .iter()
                .filter(|s| s.profile.as_deref() == Some(name.as_str()))
                .cloned()
                .collect();
            if mine.is_empty() {
                let mut known: Vec<_> = profiled.iter().filter_map(|s| s.profile.clone()).collect();
                known.dedup();
                let known = if known.is_empty() {
                    "no profiles are defined".to_string()
                } else {
                    format!("defined: {}", known.join(", "))
                };
                return Err(anyhow!(
                    "unknown profile '{name}' (selected by {from}); {known}"
                ));
            }
            for s in mine {
                config.apply(s);
            }
            config.profile = Some(name);
        }
        Ok(config)
    }

    fn apply(&mut self, s: Setting) {
        self.values.insert(
            s.key,
            Entry {
                value: s.value,
                origin: s.origin,
            },
        );
    }

    /// A copy with dedicated command-line flags applied on top (they win over
    /// every layer). Each item is `(key, value, flag name)`; `None` values are
    /// skipped.
    pub fn with_flags(&self, flags: &[(&str, Option<String>, &str)]) -> anyhow::Result<Config> {
        let mut config = self.clone();
        for (key, value, flag) in flags {
            let Some(value) = value else { continue };
            let mut s = layer::from_override(&format!("{key}={value}"), flag)?;
            s.origin = Origin::Flag(format!("{flag} {value}"));
            config.apply(s);
        }
        Ok(config)
    }

    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&toml::Value> {
        self.values.get(key).map(|e| &e.value)
    }

    /// The value and origin of `key`, if set.
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        self.values.get(key)
    }

    /// A string value; `None` when unset (or not a string, e.g. `gpu = 1`).
    pub fn str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(toml::Value::as_str)
    }

    /// A boolean value; unset is `false`.
    pub fn bool(&self, key: &str) -> bool {
        self.get(key)
            .and_then(toml::Value::as_bool)
            .unwrap_or(false)
    }

    /// An integer value.
    pub fn int(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(toml::Value::as_integer)
    }

    /// A duration value; `None` when unset or zero (= no limit).
    pub fn duration(&self, key: &str) -> Option<Duration> {
        let d = match self.get(key)? {
            toml::Value::Integer(i) => Duration::from_secs(u64::try_from(*i).ok()?),
            toml::Value::String(s) => schema::parse_duration(s).ok()?,
            _ => return None,
        };
        (!d.is_zero()).then_some(d)
    }

    /// A size in bytes.
    pub fn size(&self, key: &str) -> Option<u64> {
        match self.get(key)? {
            toml::Value::Integer(i) => u64::try_from(*i).ok(),
            toml::Value::String(s) => schema::parse_size(s).ok(),
            _ => None,
        }
    }

    /// A list of strings; unset is empty.
    pub fn strings(&self, key: &str) -> Vec<String> {
        self.get(key)
            .and_then(toml::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// `rocm.path`, with the Windows default when the key still holds the
    /// Linux default on Windows.
    pub fn rocm_path(&self) -> PathBuf {
        let configured = self.str("rocm.path").unwrap_or("/opt/rocm");
        if cfg!(windows)
            && matches!(self.entry("rocm.path"), Some(e) if e.origin == Origin::Default)
        {
            return PathBuf::from(r"C:\Program Files\AMD\ROCm\6.2");
        }
        PathBuf::from(configured)
    }

    /// The selected profile, if any.
    pub fn profile(&self) -> Option<&str> {
        self.profile.as_deref()
    }

    /// The config files consulted, in layer order.
    pub fn files(&self) -> &[ConfigFile] {
        &self.files
    }

    /// The project `.hrr/` found from the current directory, and every
    /// `.hrr/` passed over with the reason.
    pub fn project(&self) -> &Project {
        &self.project
    }

    /// Every set value, sorted by key.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &Entry)> {
        self.values.iter().map(|(k, e)| (k.as_str(), e))
    }

    /// The user aliases by name (`alias.<name>` → command line and the
    /// file, line or flag that set it).
    pub fn aliases(&self) -> BTreeMap<String, Alias> {
        self.entries()
            .filter_map(|(k, e)| {
                let name = k.strip_prefix(schema::ALIAS_PREFIX)?;
                let alias = Alias {
                    expansion: e.value.as_str()?.to_string(),
                    origin: e.origin.clone(),
                };
                Some((name.to_string(), alias))
            })
            .collect()
    }
}

/// Parses the text of one config file as the only layer over the built-in
/// defaults, exactly as `hrr` reads a site, user, project or `--config` file
/// (a `profile = "…"` key in it selects one of its `[profile.NAME]` tables).
/// `path` only names the file in error messages. For callers that hold the
/// text rather than a file (the fuzz targets and their regression test).
pub fn parse_text(path: &Path, text: &str) -> anyhow::Result<Config> {
    let settings = layer::parse_file(path, text)?;
    Config::from_layers(settings, Vec::new(), None)
}

/// The user's config directory (`~/.config/hrr` on Linux,
/// `%APPDATA%\hrr` on Windows).
pub fn user_dir() -> Option<PathBuf> {
    directories::BaseDirs::new().map(|b| b.config_dir().join("hrr"))
}

/// The site config file: `HRR_SITE_CONFIG` when set (packagers, tests), else
/// `/etc/hrr/config.toml` (Windows: `%ProgramData%\hrr\config.toml`).
pub fn site_file(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    if let Some(p) = env("HRR_SITE_CONFIG").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    if cfg!(windows) {
        let base = env("ProgramData").unwrap_or_else(|| r"C:\ProgramData".into());
        return Path::new(&base).join("hrr").join("config.toml");
    }
    PathBuf::from("/etc/hrr/config.toml")
}

fn consulted_files(
    opts: &LoadOptions,
    env: &dyn Fn(&str) -> Option<String>,
    project: &Project,
    cwd: &Path,
) -> Vec<ConfigFile> {
    let mut paths = vec![(FileRole::Site, site_file(env))];
    if let Some(dir) = user_dir() {
        paths.push((FileRole::User, dir.join("config.toml")));
    }
    // With no `.hrr/` anywhere, name where a project file would be read
    // from; a `.hrr/` passed over is listed with its reason instead.
    let nothing_found = project.skipped.is_empty() && project.inside_archive.is_none();
    match project.config_file() {
        Some(file) => paths.push((FileRole::Project, file)),
        None if nothing_found => {
            paths.push((FileRole::Project, cwd.join(".hrr").join("config.toml")));
        }
        None => {}
    }
    let explicit = opts.config_file.clone().or_else(|| {
        env("HRR_CONFIG")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
    });
    if let Some(p) = explicit {
        paths.push((FileRole::Explicit, p));
    }
    paths
        .into_iter()
        .map(|(role, path)| ConfigFile {
            exists: path.is_file(),
            role,
            path,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(
        files: &[(&Path, &str)],
        env: &[(&str, &str)],
        opts: LoadOptions,
    ) -> anyhow::Result<Config> {
        for (p, text) in files {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let lookup = move |k: &str| env.get(k).cloned();
        let cwd = files
            .first()
            .map_or(PathBuf::from("/nonexistent"), |(p, _)| {
                p.parent().unwrap().to_path_buf()
            });
        Config::load_with(&opts, &lookup, &cwd)
    }

    #[test]
    fn defaults_are_complete() {
        let c = Config::with_overrides(&[]).unwrap();
        assert_eq!(c.str("replay.mode"), Some("auto"));
        assert_eq!(
            c.duration("replay.timeout"),
            Some(Duration::from_secs(1800))
        );
        assert!(c.bool("replay.trace_kernels"));
        assert_eq!(c.size("lua.max_memory"), Some(512 << 20));
        assert_eq!(c.str("playback.path"), None);
        assert_eq!(c.entry("replay.sync").unwrap().origin, Origin::Default);
    }

    #[test]
    fn site_then_explicit_then_env_then_profile_then_flag() {
        let dir = tempfile::tempdir().unwrap();
        let site = dir.path().join("site.toml");
        let explicit = dir.path().join("mine.toml");
        let files = [
            (site.as_path(), "[replay]\ntimeout = \"5m\"\ngpu = 1\nsync = \"event\"\n[profile.lab.replay]\ngpu = 7\n"),
            (explicit.as_path(), "[replay]\ngpu = 2\n"),
        ];
        let site_s = site.to_str().unwrap();
        let opts = LoadOptions {
            config_file: Some(explicit.clone()),
            ..Default::default()
        };
        let c = load(
            &files,
            &[("HRR_SITE_CONFIG", site_s), ("HRR_REPLAY_TIMEOUT", "90")],
            opts.clone(),
        )
        .unwrap();
        assert_eq!(c.int("replay.gpu"), Some(2));
        assert_eq!(
            c.entry("replay.gpu").unwrap().origin,
            Origin::File {
                path: explicit.clone(),
                line: 2
            }
        );
        assert_eq!(c.str("replay.sync"), Some("event"));
        assert_eq!(c.duration("replay.timeout"), Some(Duration::from_secs(90)));
        assert_eq!(
            c.entry("replay.timeout").unwrap().origin,
            Origin::Env("HRR_REPLAY_TIMEOUT".into())
        );

        let with_profile = LoadOptions {
            profile: Some("lab".into()),
            ..opts.clone()
        };
        let c = load(&files, &[("HRR_SITE_CONFIG", site_s)], with_profile.clone()).unwrap();
        assert_eq!(c.int("replay.gpu"), Some(7));
        assert_eq!(c.profile(), Some("lab"));

        let with_flag = LoadOptions {
            overrides: vec!["replay.gpu=3".into()],
            ..with_profile
        };
        let c = load(&files, &[("HRR_SITE_CONFIG", site_s)], with_flag).unwrap();
        assert_eq!(c.int("replay.gpu"), Some(3));
        let c = c
            .with_flags(&[("replay.gpu", Some("4".into()), "--gpu")])
            .unwrap();
        assert_eq!(c.int("replay.gpu"), Some(4));
        assert_eq!(
            c.entry("replay.gpu").unwrap().origin,
            Origin::Flag("--gpu 4".into())
        );
    }

    #[test]
    fn profile_selected_by_key_or_env_and_unknown_profile_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let site = dir.path().join("site.toml");
        let text = "[profile.a.docker]\nimage = \"img-a\"\n[profile.b.docker]\nimage = \"img-b\"\n";
        let s = site.to_str().unwrap();
        let mine = dir.path().join("mine.toml");
        let by_key = LoadOptions {
            config_file: Some(mine.clone()),
            ..Default::default()
        };
        let c = load(
            &[(&site, text), (&mine, "profile = \"a\"\n")],
            &[("HRR_SITE_CONFIG", s)],
            by_key,
        )
        .unwrap();
        assert_eq!(c.str("docker.image"), Some("img-a"));
        let c = load(
            &[(&site, text)],
            &[("HRR_SITE_CONFIG", s), ("HRR_PROFILE", "b")],
            LoadOptions::default(),
        )
        .unwrap();
        assert_eq!(c.str("docker.image"), Some("img-b"));
        let err = load(
            &[(&site, text)],
            &[("HRR_SITE_CONFIG", s)],
            LoadOptions {
                profile: Some("mi300".into()),
                ..Default::default()
            },
        )
        .unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            msg.contains("unknown profile 'mi300' (selected by --profile)"),
            "{msg}"
        );
        assert!(msg.contains("defined: a, b"), "{msg}");
    }

    #[test]
    fn legacy_env_names_map_to_keys() {
        let env = [
            ("ROCM_PATH", "/opt/rocm-7.0"),
            ("HIP_PATH", "/ignored"),
            ("HRR_PLAYBACK", "/x/hrr-playback"),
            ("GPU", "1"),
            ("HRR_SKIP_COMPAT", "1"),
            ("HRR_DOCKER_IMAGE", "rocm/vllm"),
            ("HIP_HRR_REPLAY_PROGRESS_SECONDS", "5"),
            ("HRR_SITE_CONFIG", "/nonexistent/site.toml"),
        ];
        let c = load(&[], &env, LoadOptions::default()).unwrap();
        assert_eq!(c.rocm_path(), PathBuf::from("/opt/rocm-7.0"));
        assert_eq!(c.str("playback.path"), Some("/x/hrr-playback"));
        assert_eq!(c.int("replay.gpu"), Some(1));
        assert!(c.bool("preflight.skip"));
        assert_eq!(c.str("docker.image"), Some("rocm/vllm"));
        assert_eq!(c.int("replay.progress_seconds"), Some(5));
        let err = load(&[], &[("HRR_CONTINUE", "maybe")], LoadOptions::default()).unwrap_err();
        assert!(format!("{err:#}").contains("HRR_CONTINUE (sets preflight.continue)"));
    }

    #[test]
    fn parse_text_layers_one_file_over_the_defaults() {
        let path = Path::new("lab.toml");
        let c = parse_text(path, "[replay]\ngpu = 2\n").unwrap();
        assert_eq!(c.int("replay.gpu"), Some(2));
        assert_eq!(
            c.entry("replay.gpu").unwrap().origin,
            Origin::File {
                path: path.into(),
                line: 2
            }
        );
        assert_eq!(c.str("replay.mode"), Some("auto"));
        assert_eq!(c.entry("replay.mode").unwrap().origin, Origin::Default);
        let err = parse_text(path, "[replay]\ngpux = 1\n").unwrap_err();
        assert!(format!("{err:#}").contains("lab.toml:2"), "{err:#}");
        let err = parse_text(path, "profile = \"mi300\"\n").unwrap_err();
        assert!(
            format!("{err:#}").contains("unknown profile 'mi300'"),
            "{err:#}"
        );
    }

    #[test]
    fn missing_explicit_file_is_an_error() {
        let err = load(
            &[],
            &[],
            LoadOptions {
                config_file: Some("/nope/c.toml".into()),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(format!("{err:#}")
            .contains("config file /nope/c.toml does not exist (named by --config)"));
    }
}
