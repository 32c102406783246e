//! `hrr archive info`, `hrr archive events` and `hrr archive memory`:
//! decode an archive without ROCm (DESIGN §3, §3.2).

use std::io::{self, BufWriter, Write};

use anyhow::{anyhow, bail};

use crate::cli::{ArchiveCmd, ArchiveEventsArgs, ArchiveInfoArgs, ArchiveMemoryArgs, KernelRows};
use hrr::archive::event_stream::Events;
use hrr::archive::format::apis::ApiTable;
use hrr::archive::memory::MemoryReport;
use hrr::archive::{self, report, Info};
use hrr::context::Context;

/// Kernel rows of the text report when `--kernels` is not given.
const DEFAULT_TEXT_KERNELS: usize = 20;

/// Runs `hrr archive <cmd>`.
pub fn run(ctx: &Context, cmd: &ArchiveCmd) -> anyhow::Result<i32> {
    match cmd {
        ArchiveCmd::Info(args) => info(args),
        ArchiveCmd::Events(args) => events(ctx, args),
        ArchiveCmd::Memory(args) => memory(args),
    }
}

fn memory(args: &ArchiveMemoryArgs) -> anyhow::Result<i32> {
    let process = archive::single_process(&args.archive)?;
    let report = MemoryReport::build(&process, args.at, args.address)?;
    if args.json {
        hrr::ui::print(serde_json::to_string_pretty(&report)? + "\n")?;
    } else {
        hrr::ui::print(report.text())?;
    }
    Ok(0)
}

fn info(args: &ArchiveInfoArgs) -> anyhow::Result<i32> {
    let rows = match args.kernels {
        Some(KernelRows::All) => None,
        Some(KernelRows::First(n)) => Some(n),
        None if args.json => None,
        None => Some(DEFAULT_TEXT_KERNELS),
    };
    let summarize = if args.no_memory {
        archive::summary::pass::summarize_without_memory
    } else {
        archive::summarize
    };
    match archive::info_by(&args.archive, summarize)? {
        Info::Process(mut s) => {
            if args.json {
                if let Some(n) = rows {
                    s.kernels.truncate(n);
                }
                hrr::ui::print(serde_json::to_string_pretty(&s)? + "\n")?;
            } else {
                hrr::ui::print(report::process_text(&s, rows))?;
            }
            if let Some(p) = s.fatal_problem() {
                return Err(anyhow!("{}: {}", s.path, p.detail));
            }
            Ok(0)
        }
        Info::Root(r) => {
            if args.json {
                hrr::ui::print(serde_json::to_string_pretty(&r)? + "\n")?;
            } else {
                hrr::ui::print(report::root_text(&r))?;
            }
            Ok(0)
        }
    }
}

/// Resolves `--api NAME` to a raw id of this archive's table.
fn api_filter(table: ApiTable, name: &str) -> anyhow::Result<u16> {
    if let Some(id) = table.id_of(name) {
        return Ok(id);
    }
    if let Some(n) = name
        .strip_prefix("unknown(")
        .and_then(|r| r.strip_suffix(')'))
    {
        if let Ok(id) = n.parse::<u16>() {
            return Ok(id);
        }
    }
    bail!(
        "--api {name}: no such API in the {} table (names are case-sensitive, e.g. hipModuleLaunchKernel; ids beyond the table are written unknown(<id>))",
        table.label()
    )
}

fn events(ctx: &Context, args: &ArchiveEventsArgs) -> anyhow::Result<i32> {
    let target = archive::resolve(&args.archive)?;
    if target.kind == hrr::archive::ArchiveKind::Root && target.processes.len() > 1 {
        ctx.ui.status(&format!(
            "{} processes in this root; showing pid {} ({})",
            target.processes.len(),
            target.chosen,
            target.reason
        ));
    }
    let mut stream = Events::open(&target.dir)?;
    let api = args
        .api
        .as_deref()
        .map(|name| api_filter(stream.table(), name))
        .transpose()?;
    let from = args.from.unwrap_or(0);
    let limit = args.limit.unwrap_or(u64::MAX);
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut shown = 0u64;
    while shown < limit {
        let Some(ev) = stream.next_matching(from, api)? else {
            break;
        };
        let line = if args.json {
            serde_json::to_string(&ev)?
        } else {
            hrr::ui::inert(&ev.text_line()).replace('\n', "\\n")
        };
        if let Err(e) = writeln!(out, "{line}") {
            if e.kind() == io::ErrorKind::BrokenPipe {
                return Ok(0);
            }
            return Err(hrr::ui::stdout_error(e));
        }
        shown += 1;
    }
    match out.flush() {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => return Err(hrr::ui::stdout_error(e)),
        _ => {}
    }
    if shown == limit {
        ctx.ui
            .status(&format!("stopped after {shown} events (--limit)"));
        return Ok(0);
    }
    let end = stream.end();
    let trailer = match end.trailer {
        Some(n) if n == end.events => format!("trailer counts {n} (complete)"),
        Some(n) => format!("trailer counts {n} but {} events were read", end.events),
        None => "no trailer".to_string(),
    };
    let mut msg = format!("{shown} shown of {} events; {trailer}", end.events);
    if end.after_trailer > 0 {
        msg.push_str(&format!(
            "; {} records after the trailer not decoded",
            end.after_trailer
        ));
    }
    if let Some(t) = end.torn {
        msg.push_str(&format!("; torn tail: {t}"));
    }
    ctx.ui.status(&msg);
    Ok(0)
}
