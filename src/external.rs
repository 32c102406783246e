//! Running an external subcommand: the `hrr-foo` that
//! [`hrr::external_search`] found for `hrr foo` (DESIGN §9).

use std::path::Path;

use anyhow::Context as _;

use hrr::context::Context;

/// Runs the external with argv `[path, name, args…]` and the environment
/// `HRR`, `HRR_CONFIG_FILES`, `HRR_PROFILE`. On Unix the process is replaced
/// (exec), so its exit status is `hrr`'s; elsewhere the status is returned.
pub fn run(ctx: &Context, path: &Path, name: &str, args: &[String]) -> anyhow::Result<i32> {
    let mut cmd = std::process::Command::new(path);
    cmd.arg(name).args(args);
    cmd.env("HRR", crate::dispatch::self_path());
    let files: Vec<&Path> = ctx
        .config
        .files()
        .iter()
        .filter(|f| f.exists)
        .map(|f| f.path.as_path())
        .collect();
    cmd.env(
        "HRR_CONFIG_FILES",
        std::env::join_paths(files).unwrap_or_default(),
    );
    match ctx.config.profile() {
        Some(p) => cmd.env("HRR_PROFILE", p),
        None => cmd.env_remove("HRR_PROFILE"),
    };
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let err = cmd.exec();
        Err(err).with_context(|| format!("cannot run {}", path.display()))
    }
    #[cfg(not(unix))]
    {
        let status = cmd
            .status()
            .with_context(|| format!("cannot run {}", path.display()))?;
        Ok(status.code().unwrap_or(1))
    }
}
