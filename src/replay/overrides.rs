//! The settings a front end gives on top of the config for one replay: the
//! flags of `hrr replay` and `hrr triage`, the fields of `hrr.replay.run`.
//! They are typed here and turned into config values in one place, so every
//! front end layers them the same way and the config records where each
//! came from (`hrr config show --origin`, error messages).

use std::path::PathBuf;

use super::{GpuChoice, ReplayMode, SyncMode};
use crate::config::Config;

/// Replay settings that win over every config layer; `None` leaves the
/// config's value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides {
    /// `replay.mode`.
    pub mode: Option<ReplayMode>,
    /// `replay.gpu`.
    pub gpu: Option<GpuChoice>,
    /// `replay.timeout`, in the config's duration syntax (90, 90s, 30m, 1h).
    pub timeout: Option<String>,
    /// `replay.sync`.
    pub sync: Option<SyncMode>,
    /// `replay.trace_kernels`.
    pub trace_kernels: Option<bool>,
    /// `replay.progress_seconds`.
    pub progress_seconds: Option<u32>,
    /// `playback.path`.
    pub player: Option<PathBuf>,
    /// `docker.image`.
    pub image: Option<String>,
}

/// One typed setting as the config takes it: its key, the field whose
/// origin names it (see [`Overrides::apply`]), and its value (`None`:
/// unset, the config's value stays).
pub type Setting = (&'static str, &'static str, Option<String>);

impl Overrides {
    /// `config` with these settings applied. `origin` names where a setting
    /// came from (a flag, a Lua field) from its field name (`"mode"`,
    /// `"gpu"`, …); the config checks every value and names that origin in
    /// its error.
    pub fn apply(
        &self,
        config: &Config,
        origin: impl Fn(&str) -> String,
    ) -> anyhow::Result<Config> {
        apply(config, self.settings(), origin)
    }

    /// These settings, for a front end that layers more of its own with
    /// them ([`apply`]).
    pub fn settings(&self) -> Vec<Setting> {
        let gpu = self.gpu.map(|g| match g {
            GpuChoice::Auto => "auto".to_string(),
            GpuChoice::Ordinal(n) => n.to_string(),
        });
        vec![
            (
                "replay.mode",
                "mode",
                self.mode.map(|m| m.name().to_string()),
            ),
            ("replay.gpu", "gpu", gpu),
            ("replay.timeout", "timeout", self.timeout.clone()),
            (
                "replay.sync",
                "sync",
                self.sync.map(|s| s.name().to_string()),
            ),
            (
                "replay.trace_kernels",
                "trace_kernels",
                self.trace_kernels.map(|b| b.to_string()),
            ),
            (
                "replay.progress_seconds",
                "progress_seconds",
                self.progress_seconds.map(|n| n.to_string()),
            ),
            (
                "playback.path",
                "player",
                self.player.as_ref().map(|p| p.display().to_string()),
            ),
            ("docker.image", "image", self.image.clone()),
        ]
    }
}

/// `config` with `settings` applied as one layer above every other, each
/// value's origin named by `origin` from its field.
pub fn apply(
    config: &Config,
    settings: Vec<Setting>,
    origin: impl Fn(&str) -> String,
) -> anyhow::Result<Config> {
    let labels: Vec<String> = settings.iter().map(|(_, field, _)| origin(field)).collect();
    let flags: Vec<(&str, Option<String>, &str)> = settings
        .into_iter()
        .zip(&labels)
        .map(|((key, _, value), label)| (key, value, label.as_str()))
        .collect();
    config.with_flags(&flags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_setting_lands_on_its_key_with_its_origin() {
        let overrides = Overrides {
            mode: Some(ReplayMode::Docker),
            gpu: Some(GpuChoice::Ordinal(3)),
            timeout: Some("30m".into()),
            sync: Some(SyncMode::None),
            image: Some("rocm/dev:6.4".into()),
            ..Overrides::default()
        };
        let base = Config::with_overrides(&[]).unwrap();
        let c = overrides.apply(&base, |f| format!("--{f}")).unwrap();
        assert_eq!(c.str("replay.mode"), Some("docker"));
        assert_eq!(c.int("replay.gpu"), Some(3));
        assert_eq!(c.str("replay.sync"), Some("none"));
        assert_eq!(c.str("docker.image"), Some("rocm/dev:6.4"));
        assert_eq!(
            c.duration("replay.timeout"),
            Some(std::time::Duration::from_secs(1800))
        );
        assert_eq!(
            c.entry("replay.gpu").unwrap().origin.to_string(),
            "flag --gpu 3"
        );
        assert_eq!(
            c.str("playback.path"),
            base.str("playback.path"),
            "unset fields leave the config"
        );
    }

    #[test]
    fn a_bad_value_names_its_origin() {
        let overrides = Overrides {
            timeout: Some("soon".into()),
            ..Overrides::default()
        };
        let base = Config::with_overrides(&[]).unwrap();
        let err = overrides
            .apply(&base, |f| format!("hrr.replay.run {f}"))
            .unwrap_err();
        assert!(
            format!("{err:#}").contains("hrr.replay.run timeout"),
            "{err:#}"
        );
    }
}
