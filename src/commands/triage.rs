//! `hrr triage`: the builtin front end of the `triage` Lua workflow. It
//! parses the flags, applies them to the config, refuses outputs inside the
//! archive before any work starts, and runs `triage.lua` (a site's one in a
//! scripts directory, else the preset embedded in `hrr`, which
//! `--print-workflow` prints).
//!
//! Over many archives (several paths, `--from`, a directory searched for
//! capture roots, or any of `--shard`, `--gpus`, `--format jsonl`), it makes
//! the workflow's replay plan once, then triages each archive in an `hrr
//! triage` worker of its own ([`hrr::fleet`]) and prints each finding as its
//! archive is done.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use anyhow::{anyhow, bail, Context as _};
use serde_json::json;

use crate::cli::{GlobalArgs, TriageArgs};
use hrr::context::Context;
use hrr::finding::Finding;
use hrr::fleet::{expand, names, shard::Shard, worker::Worker};
use hrr::lua::{self, Invocation};
use hrr::render::Format;
use hrr::safety::ensure_outside;

/// Runs the triage workflow for `args`, or prints the embedded one
/// (`--print-workflow`); `global` is passed on to the workers of a run over
/// many archives.
pub fn run(ctx: Context, global: &GlobalArgs, args: &TriageArgs) -> anyhow::Result<i32> {
    if args.print_workflow {
        let workflow = lua::scripts::embedded("triage")
            .ok_or_else(|| anyhow!("the triage workflow is missing from this build of hrr"))?;
        hrr::ui::print(workflow.text()?)?;
        return Ok(0);
    }
    let config = args.overrides().apply(&ctx.config)?;
    let mut paths = args.archives.clone();
    if let Some(list) = &args.from {
        paths.extend(expand::read_list(list)?);
    }
    let expanded = expand::expand(&paths, &mut |w| ctx.ui.warn(w));
    let format = Format::chosen(&config, args.format)?;
    let fleet = args.archives.len() > 1
        || args.from.is_some()
        || expanded.searched
        || args.shard.is_some()
        || args.gpus.is_some()
        || format == Format::Jsonl;
    let ctx = Context { config, ..ctx };
    match (fleet, args.archives.first()) {
        (false, Some(archive)) => one(ctx, args, archive),
        _ => many(ctx, global, args, expanded, format),
    }
}

/// Triages one archive with the workflow, in this process.
fn one(ctx: Context, args: &TriageArgs, archive: &Path) -> anyhow::Result<i32> {
    if !archive.is_dir() {
        bail!(
            "archive not found: {} (give a pid-* directory or a capture root)",
            archive.display()
        );
    }
    let root = hrr::safety::archive_root(archive);
    let workdir = hrr::workdir::configured(&ctx.config);
    ensure_outside(&workdir, &root)?;
    if let Some(output) = &args.output {
        ensure_outside(output, &root)?;
    }
    // Refuse an `-o` that must not be written before any work starts; a
    // pipe stays open until the workflow has written it, so its reader does
    // not see the end of its input in between.
    #[cfg_attr(not(windows), allow(unused_mut))]
    let mut _output = args
        .output
        .as_deref()
        .map(hrr::output_file::open)
        .transpose()?;
    // Without a WSL route, the workflow's replay refuses docker, pointing
    // at WSL2.
    #[cfg(windows)]
    if ctx.config.str("replay.mode") == Some("docker") {
        if let Some(code) = through_wsl(&ctx, args, archive, &mut _output)? {
            return Ok(code);
        }
    }
    let workflow = lua::scripts::find(&ctx.config, "triage")
        .ok_or_else(|| anyhow!("the triage workflow is missing from this build of hrr"))?;
    let mut opts = workflow_opts(args);
    opts.insert(
        "archive".into(),
        hrr::safety::resolve(archive).display().to_string().into(),
    );
    if let Some(plan) = &args.plan {
        let plan: serde_json::Value =
            serde_json::from_str(plan).context("--plan is not the JSON of a replay plan")?;
        opts.insert("plan".into(), plan);
    }
    let invocation = Invocation {
        args: vec![archive.as_os_str().to_owned()],
        opts,
        path_opts: std::iter::once(("archive", hrr::safety::resolve(archive)))
            .chain(args.output.iter().map(|o| ("output", o.clone())))
            .collect(),
        outputs: args.output.iter().cloned().collect(),
    };
    lua::run_workflow(Rc::new(ctx), &workflow, invocation)
}

/// `--replay docker` on Windows, through WSL ([`hrr::replay::wsl`]): the
/// triage inside WSL prints the finding, which is printed (and written to
/// `output`) as it came, and its exit status is this run's. `None` when
/// there is no route: no `wsl.exe`, or no `hrr` answering inside WSL
/// (which is warned about).
#[cfg(windows)]
fn through_wsl(
    ctx: &Context,
    args: &TriageArgs,
    archive: &Path,
    output: &mut Option<hrr::output_file::Destination>,
) -> anyhow::Result<Option<i32>> {
    use hrr::replay::wsl;
    let Some(exe) = wsl::find_wsl(
        std::env::var_os("PATH").as_deref(),
        std::env::var_os("SystemRoot").as_deref(),
    ) else {
        return Ok(None);
    };
    if let Err(why) = wsl::probe(&exe) {
        ctx.ui.warn(&format!(
            "{} is here, but {why}: docker replay through WSL needs hrr installed inside WSL2",
            exe.display()
        ));
        return Ok(None);
    }
    let inside = wsl::translate(&hrr::safety::resolve(archive).display().to_string())?;
    let format = Format::chosen(&ctx.config, args.format)?;
    let mut flags = vec!["--format", format.name()];
    for (set, flag) in [
        (args.all, "--all"),
        (args.yes, "--yes"),
        (args.exit_code, "--exit-code"),
    ] {
        if set {
            flags.push(flag);
        }
    }
    let argv = wsl::triage_argv(&exe, &ctx.config, &inside, &flags);
    let shown: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    ctx.ui
        .status(&format!("docker replay through WSL: {}", shown.join(" ")));
    // Its status lines and warnings are already `[hrr] …` and `warning: …`.
    let done = wsl::run(&argv, &|line| {
        if !ctx.ui.quiet() {
            eprintln!("{}", hrr::ui::inert(line));
        }
    })?;
    if done.stdout.is_empty() {
        let why = match done.errors.as_slice() {
            [] => done.status.map_or_else(
                || "wsl.exe was killed".to_string(),
                |s| format!("it exited with status {s} and printed no finding"),
            ),
            errors => errors.join("; "),
        };
        return Err(hrr::error::Failure::new(
            done.status.filter(|s| *s != 0).unwrap_or(1),
            format!("the triage inside WSL failed: {why}"),
        )
        .into());
    }
    for e in &done.errors {
        eprintln!("error: {}", hrr::ui::inert(e));
    }
    hrr::ui::print(&done.stdout)?;
    if let Some(dest) = output.take() {
        let path = dest.path().display().to_string();
        dest.write(&done.stdout)?;
        ctx.ui.status(&format!("wrote {path}"));
    }
    Ok(Some(done.status.unwrap_or(1)))
}

/// `hrr.opts` of the flags every run shares.
fn workflow_opts(args: &TriageArgs) -> serde_json::Map<String, serde_json::Value> {
    let opts = json!({
        "all": args.all,
        "no_replay": args.no_replay,
        "exit_code": args.exit_code,
        "output": args.output.as_ref().map(|o| o.display().to_string()),
    });
    opts.as_object().cloned().unwrap_or_default()
}

/// Triages many archives, each in a worker; see the module doc.
fn many(
    ctx: Context,
    global: &GlobalArgs,
    args: &TriageArgs,
    expanded: expand::Expanded,
    format: Format,
) -> anyhow::Result<i32> {
    let shard = args.shard.as_deref().map(str::parse::<Shard>).transpose()?;
    let gpus = match (&args.gpus, ctx.config.str("replay.gpus")) {
        (Some(list), _) => Some(gpu_list(list, "--gpus")?),
        (None, Some(list)) => Some(gpu_list(list, "config replay.gpus")?),
        (None, None) => None,
    };
    let several = args.archives.len() > 1 || args.from.is_some() || expanded.searched;
    if expanded.archives.is_empty() {
        bail!(
            "no archive to triage: no capture root or pid-* directory was found in the paths given"
        );
    }
    let total = expanded.archives.len();
    let archives = match shard {
        Some(s) => s.select(expanded.archives),
        None => expanded.archives,
    };
    if let Some(s) = shard.filter(|_| archives.is_empty()) {
        ctx.ui.status(&format!(
            "shard {}/{} of {total} archives is empty: nothing to triage",
            s.index, s.count
        ));
        return Ok(0);
    }
    let base = hrr::workdir::configured(&ctx.config);
    for archive in &archives {
        let root = hrr::safety::archive_root(archive);
        ensure_outside(&base, &root)?;
        if let Some(output) = &args.output {
            ensure_outside(output, &root)?;
        }
    }
    let mut sink = Sink::open(format, args.output.as_deref(), several)?;
    // Nothing is created before the plan, which can still refuse the run.
    let plan = make_plan(&ctx, args)?;
    let workdir = hrr::workdir::ensure(&ctx.config, &|m| ctx.ui.warn(m))?;
    sink.start()?;
    let metadata_only = plan.get("mode").and_then(|m| m.as_str()) == Some("metadata");
    let count = archives.len();
    let slots = hrr::fleet::triage::slots(metadata_only, gpus.as_deref(), count);
    let worker = Worker {
        program: std::env::current_exe()
            .context("cannot find the hrr executable to start the triage workers")?,
        global: worker_globals(global, &plan),
        flags: worker_flags(args, &plan),
        workdir,
    };
    let mut done = 0;
    let mut code = 0;
    let mut failure: Option<anyhow::Error> = None;
    let interrupted = hrr::fleet::triage::run(&worker, archives, &slots, |triaged| {
        done += 1;
        code = code.max(triaged.exit_code);
        for f in &triaged.findings {
            ctx.ui.status(&format!(
                "{done}/{count} {}: {}",
                f.archive.as_deref().unwrap_or_default(),
                hrr::render::outcome_word(f.outcome)
            ));
            if failure.is_none() {
                failure = sink.add(f, &triaged.archive).err();
            }
        }
    })?;
    if let Some(e) = failure {
        return Err(e);
    }
    if let Some(path) = sink.finish()? {
        ctx.ui.status(&format!("wrote {}", path.display()));
    }
    if let Some(sig) = interrupted {
        return Err(hrr::error::Failure::new(
            128 + sig,
            format!("triage interrupted by signal {sig}: the workers were stopped; each archive's finding says how far it got"),
        )
        .into());
    }
    Ok(if args.exit_code { code } else { 0 })
}

/// `--gpus` / `replay.gpus`: comma-separated GPU indices, each visible
/// under the device masks hrr was given, none twice.
fn gpu_list(text: &str, origin: &str) -> anyhow::Result<Vec<u32>> {
    let list =
        hrr::config::schema::parse_gpu_list(text).with_context(|| format!("{origin} {text}"))?;
    let masks = hrr::replay::visible::DeviceMasks::from_env();
    if let Some(visible) = hrr::replay::visible::visible(&masks, None) {
        for &gpu in &list {
            hrr::replay::visible::select(&visible, gpu, &masks)
                .with_context(|| format!("{origin} {text}"))?;
        }
    }
    Ok(list)
}

/// The workflow's replay plan, made once for every worker: the player is
/// located, or built, here, and never again.
fn make_plan(ctx: &Context, args: &TriageArgs) -> anyhow::Result<serde_json::Value> {
    let workflow = lua::scripts::find(&ctx.config, "triage")
        .ok_or_else(|| anyhow!("the triage workflow is missing from this build of hrr"))?;
    let invocation = Invocation {
        opts: workflow_opts(args),
        ..Invocation::default()
    };
    lua::run_step(Rc::new(ctx.clone()), &workflow, invocation, "plan")
}

/// The global flags of a worker: the config this run read, quiet (its
/// status lines would interleave with the others'), and the plan's player
/// as `playback.path`.
fn worker_globals(global: &GlobalArgs, plan: &serde_json::Value) -> Vec<OsString> {
    let mut out: Vec<OsString> = vec!["--quiet".into(), "--color".into(), "never".into()];
    if let Some(file) = &global.config {
        out.extend(["--config".into(), file.clone().into()]);
    }
    if let Some(profile) = &global.profile {
        out.extend(["--profile".into(), profile.into()]);
    }
    for set in &global.set {
        out.extend(["-c".into(), set.into()]);
    }
    if let Some(player) = plan.pointer("/player/path").and_then(|p| p.as_str()) {
        out.extend(["-c".into(), format!("playback.path={player}").into()]);
    }
    out
}

/// The flags of `hrr triage` a worker gets: JSON out, the plan, and the
/// user's own flags that shape one archive's triage.
fn worker_flags(args: &TriageArgs, plan: &serde_json::Value) -> Vec<OsString> {
    let mut out: Vec<OsString> = vec![
        "--format".into(),
        "json".into(),
        "--plan".into(),
        plan.to_string().into(),
    ];
    if let Some(mode) = args.replay {
        out.extend(["--replay".into(), mode.name().into()]);
    }
    if let Some(image) = &args.image {
        out.extend(["--image".into(), image.into()]);
    }
    if let Some(timeout) = &args.timeout {
        out.extend(["--timeout".into(), timeout.into()]);
    }
    if let Some(gpu) = args.gpu {
        out.extend(["--gpu".into(), gpu.to_string().into()]);
    }
    let switches = [
        (args.no_replay, "--no-replay"),
        (args.no_sync, "--no-sync"),
        (args.all, "--all"),
        (args.yes, "--yes"),
        (args.exit_code, "--exit-code"),
    ];
    out.extend(switches.iter().filter(|s| s.0).map(|s| s.1.into()));
    out
}

/// Where the findings of a run over many archives go, as each comes.
struct Sink {
    format: Format,
    /// `-o DIR` (several archives): one JSON finding per process.
    dir: Option<PathBuf>,
    /// `-o FILE` (one archive): the whole output, written at the end.
    file: Option<(PathBuf, hrr::output_file::Destination)>,
    /// What was printed, for `-o FILE`.
    printed: String,
    /// The findings so far (the JSON list and the markdown summary).
    findings: Vec<Finding>,
}

impl Sink {
    /// Checks and opens `-o` before any work: a directory when `several`
    /// archives are triaged (created by [`Sink::start`] once the work
    /// starts, so a run refused before that leaves none), else a file.
    fn open(format: Format, output: Option<&Path>, several: bool) -> anyhow::Result<Sink> {
        let mut sink = Sink {
            format,
            dir: None,
            file: None,
            printed: String::new(),
            findings: Vec::new(),
        };
        match output {
            Some(dir) if several => {
                hrr::safety::ensure_not_in_archive(dir)?;
                if dir.exists() && !dir.is_dir() {
                    bail!(
                        "cannot use {} as the -o directory of the findings: it is not a directory (give a new or existing directory)",
                        dir.display()
                    );
                }
                sink.dir = Some(dir.to_path_buf());
            }
            Some(file) => sink.file = Some((file.to_path_buf(), hrr::output_file::open(file)?)),
            None => {}
        }
        Ok(sink)
    }

    /// Creates the `-o` directory when it is missing: the work starts.
    fn start(&self) -> anyhow::Result<()> {
        let Some(dir) = &self.dir else { return Ok(()) };
        std::fs::create_dir_all(dir).with_context(|| {
            format!(
                "cannot use {} as the -o directory of the findings",
                dir.display()
            )
        })
    }

    /// Prints `f` (jsonl, markdown) or keeps it (json), and writes its file
    /// in `-o DIR`.
    fn add(&mut self, f: &Finding, archive: &Path) -> anyhow::Result<()> {
        if let Some(dir) = &self.dir {
            let about = f.archive.as_deref().map_or(archive, Path::new);
            let path = dir.join(names::finding_file(about));
            hrr::output_file::write(&path, hrr::render::json(f).as_bytes())?;
        }
        let text = match self.format {
            Format::Jsonl => hrr::render::json_line(f),
            Format::Markdown if self.findings.is_empty() => hrr::render::markdown(f),
            Format::Markdown => format!("\n{}", hrr::render::markdown(f)),
            Format::Json => String::new(),
        };
        self.findings.push(f.clone());
        self.print(&text)
    }

    fn print(&mut self, text: &str) -> anyhow::Result<()> {
        if self.file.is_some() {
            self.printed.push_str(text);
        }
        hrr::ui::print(text)
    }

    /// Prints what comes at the end (the JSON list, the markdown summary)
    /// and writes `-o FILE`, returning its path.
    fn finish(mut self) -> anyhow::Result<Option<PathBuf>> {
        let tail = match self.format {
            Format::Json => {
                let mut list = serde_json::to_string_pretty(&self.findings)?;
                list.push('\n');
                list
            }
            Format::Markdown if self.findings.len() > 1 => {
                let rows: Vec<(String, Finding)> = self
                    .findings
                    .iter()
                    .map(|f| (f.archive.clone().unwrap_or_default(), f.clone()))
                    .collect();
                format!("\n{}", hrr::render::summary(&rows))
            }
            _ => String::new(),
        };
        self.print(&tail)?;
        match self.file {
            Some((path, destination)) => {
                destination.write(self.printed.as_bytes())?;
                Ok(Some(path))
            }
            None => Ok(None),
        }
    }
}
