//! Preflight: can this host (or a docker image) replay the capture
//! faithfully? The capture's manifest `metadata` is compared with a probe of
//! the replay environment: GPU count, requested GPU, arch, HIP runtime and
//! comgr versions → ok / warn / confirm / blocked (reference
//! upstream-triage.md §4).

pub mod capture;
mod comgr;
pub mod docker;
pub mod host;
mod report;
pub mod rules;
pub mod smi;
#[cfg(windows)]
mod windows;

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use serde::Serialize;

use crate::config::Config;
use crate::context::Context;
use crate::replay::visible::DeviceMasks;
pub use host::{HostFacts, HostProbe};
pub use report::{PreflightReport, Status};
pub use rules::Strictness;

/// Which replay environment to probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ProbeMode {
    /// This machine.
    Host,
    /// A docker image (`docker.image` / `--image`).
    Docker,
}

/// What to check.
#[derive(Clone, Debug)]
pub struct PreflightOptions {
    /// The environment to probe.
    pub mode: ProbeMode,
    /// The image for docker mode; `None` uses `docker.image`.
    pub image: Option<String>,
    /// The replay GPU ordinal; `None` (`replay.gpu = "auto"`) checks GPU 0,
    /// and the report says so.
    pub gpu: Option<u32>,
    /// How strict the comparison is.
    pub strict: Strictness,
    /// The device masks the replay will inherit; GPU counts and indices
    /// are within them.
    pub masks: DeviceMasks,
}

impl PreflightOptions {
    /// The options `config` implies: docker mode when `replay.mode` is
    /// `docker`, or `auto` with `docker.image` set (the environment a replay
    /// would use); `replay.gpu`; `preflight.strict_version` /
    /// `preflight.strict_arch`; the device masks of hrr's environment.
    pub fn from_config(config: &Config) -> PreflightOptions {
        let image = config.str("docker.image").filter(|s| !s.is_empty());
        let mode = match (config.str("replay.mode"), image) {
            (Some("docker"), _) | (Some("auto") | None, Some(_)) => ProbeMode::Docker,
            _ => ProbeMode::Host,
        };
        PreflightOptions {
            mode,
            image: image.map(str::to_string),
            gpu: config.int("replay.gpu").and_then(|g| u32::try_from(g).ok()),
            strict: Strictness {
                version: config.bool("preflight.strict_version"),
                arch: config.bool("preflight.strict_arch"),
            },
            masks: DeviceMasks::from_env(),
        }
    }
}

/// Settings a front end gives on top of the config for one preflight (the
/// flags of `hrr preflight`, the fields of `hrr.preflight.check`); `None`
/// leaves the config's choice.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides {
    /// The environment to probe.
    pub mode: Option<ProbeMode>,
    /// The docker image to probe; naming one probes docker unless `mode`
    /// says otherwise.
    pub image: Option<String>,
    /// The replay GPU ordinal.
    pub gpu: Option<u32>,
    /// `preflight.strict_version`.
    pub strict_version: Option<bool>,
    /// `preflight.strict_arch`.
    pub strict_arch: Option<bool>,
}

impl PreflightOptions {
    /// These options with `overrides` on top.
    pub fn overridden(mut self, overrides: &Overrides) -> PreflightOptions {
        if let Some(image) = &overrides.image {
            self.image = Some(image.clone());
            self.mode = ProbeMode::Docker;
        }
        if let Some(mode) = overrides.mode {
            self.mode = mode;
        }
        if let Some(gpu) = overrides.gpu {
            self.gpu = Some(gpu);
        }
        if let Some(on) = overrides.strict_version {
            self.strict.version = on;
        }
        if let Some(on) = overrides.strict_arch {
            self.strict.arch = on;
        }
        self
    }
}

/// Checks the process archive at `process_dir` (or a capture root holding
/// exactly one `pid-*`) against the environment `opts` names. Errors only
/// when the archive cannot be found or docker mode has no usable image; a
/// probe that cannot tell leaves values unknown.
pub fn check(
    ctx: &Context,
    process_dir: &Path,
    opts: &PreflightOptions,
) -> anyhow::Result<PreflightReport> {
    let dir = resolve_process_dir(process_dir)?;
    let facts = capture::read(&dir);
    if !facts.metadata {
        return Ok(check_with(facts, None, opts));
    }
    let probe: Box<dyn HostProbe> = match opts.mode {
        ProbeMode::Host => host::native(&ctx.config),
        ProbeMode::Docker => {
            let image = opts
                .image
                .clone()
                .or_else(|| ctx.config.str("docker.image").map(str::to_string))
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    anyhow!("docker preflight needs an image: pass --image IMG or set docker.image")
                })?;
            ctx.ui.status(&format!("probing docker image {image}"));
            Box::new(docker::DockerProbe::new(&ctx.config, &image)?)
        }
    };
    Ok(check_with(facts, Some(probe.as_ref()), opts))
}

/// The report for `capture` against what `probe` finds (`None`: not probed,
/// for a capture without metadata).
pub fn check_with(
    capture: capture::CaptureFacts,
    probe: Option<&dyn HostProbe>,
    opts: &PreflightOptions,
) -> PreflightReport {
    let mut notes = Vec::new();
    let Some(probe) = probe.filter(|_| capture.metadata) else {
        notes.push(format!(
            "no manifest metadata ({}); skipping preflight: nothing to compare",
            capture
                .missing_reason
                .as_deref()
                .unwrap_or("legacy capture")
        ));
        return PreflightReport {
            status: Status::Ok,
            capture,
            host: None,
            blocks: vec![],
            confirms: vec![],
            warnings: vec![],
            notes,
        };
    };
    let mut host = probe.probe();
    host.apply_masks(&opts.masks);
    let gpu = opts.gpu.unwrap_or_else(|| {
        notes.push("replay.gpu is auto: GPU 0 was checked (pass --gpu N for another)".into());
        0
    });
    let verdict = rules::evaluate(&capture, &host, gpu, opts.strict);
    PreflightReport {
        status: PreflightReport::status_of(&verdict.blocks, &verdict.confirms, &verdict.warnings),
        capture,
        host: Some(host),
        blocks: verdict.blocks,
        confirms: verdict.confirms,
        warnings: verdict.warnings,
        notes,
    }
}

/// The process directory `path` names (see [`crate::archive::single_process`]).
pub fn resolve_process_dir(path: &Path) -> anyhow::Result<PathBuf> {
    crate::archive::single_process(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_probes_docker_unless_the_mode_says_host() {
        let config = Config::with_overrides(&["replay.mode=native", "replay.gpu=1"]).unwrap();
        let base = PreflightOptions::from_config(&config);
        assert_eq!(base.mode, ProbeMode::Host);
        let image = Overrides {
            image: Some("rocm/dev:6.4".into()),
            strict_arch: Some(true),
            ..Overrides::default()
        };
        let opts = base.clone().overridden(&image);
        assert_eq!(opts.mode, ProbeMode::Docker);
        assert_eq!(opts.image.as_deref(), Some("rocm/dev:6.4"));
        assert_eq!(opts.gpu, Some(1), "unset fields keep the config's value");
        assert!(opts.strict.arch);
        let host = Overrides {
            mode: Some(ProbeMode::Host),
            ..image
        };
        assert_eq!(base.overridden(&host).mode, ProbeMode::Host);
    }
}
