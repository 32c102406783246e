//! `hrr report PATH…`: the findings of many archives grouped by crash
//! signature, printed or written to `-o FILE`.

use anyhow::bail;

use crate::cli::ReportArgs;
use hrr::context::Context;

/// Runs `hrr report`: each file that held no finding is one warning line;
/// no finding at all is an error (exit 1), and nothing is written.
pub fn run(ctx: &Context, args: &ReportArgs) -> anyhow::Result<i32> {
    let loaded = hrr::report::load(&args.paths)?;
    for s in &loaded.skipped {
        ctx.ui.warn(&format!("skipped {}: {}", s.path, s.reason));
    }
    if loaded.findings.is_empty() {
        bail!(
            "no finding in {} file(s) read from {}; give hrr triage's JSON findings (*.finding.json, a JSON list, or JSON Lines) or directories holding them",
            loaded.files,
            shown(args)
        );
    }
    let text = hrr::report::render(&hrr::report::group(loaded), args.format)?;
    match &args.output {
        Some(path) => hrr::output_file::write(path, text.as_bytes())?,
        None => hrr::ui::print(text)?,
    }
    Ok(0)
}

/// The paths given, for the error line.
fn shown(args: &ReportArgs) -> String {
    let names: Vec<String> = args.paths.iter().map(|p| p.display().to_string()).collect();
    names.join(", ")
}
