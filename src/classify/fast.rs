//! Hand parsers for the line shapes that dominate a verbose replay log
//! (reference/playback-output.md §2c, §2d): per-event lines, argument lines,
//! `[HRR launch]`, `[HRR sync …]`, `[HRR progress]` and `Kernel '…' OK`.
//! They run on a fixed prefix, allocate nothing in the steady state (the
//! strings of the last event/launch are reused) and leave every other line to
//! the regex rules.

use super::evidence::{EventLine, Evidence, Launch, Progress};

/// `rest` is the line after its leading `[HRR`. Returns true when the line
/// was one of the hot shapes (and has been applied).
pub(crate) fn apply(rest: &str, e: &mut Evidence) -> bool {
    if let Some(r) = rest.strip_prefix("] Event ") {
        return event_line(None, r, e);
    }
    if let Some(r) = rest.strip_prefix("]   arg[") {
        if r.ends_with("(MISSING!)") {
            e.missing_args += 1;
            if e.missing_example.is_none() {
                e.missing_example = Some(format!("arg[{r}"));
            }
        }
        return true;
    }
    if let Some(r) = rest.strip_prefix(" launch] ") {
        return launch_line(r, e);
    }
    if let Some(r) = rest.strip_prefix(" progress] ") {
        return progress_line(r, e);
    }
    if let Some(r) = rest.strip_prefix("] Kernel '") {
        let Some(name) = r.strip_suffix("' OK") else {
            return false;
        };
        if let Some(l) = e.last_launch.as_mut().filter(|l| l.name == name) {
            l.completed = true;
        }
        return true;
    }
    if let Some(r) = rest.strip_prefix(" sync begin] ") {
        return sync_begin(r, e);
    }
    if let Some(r) = rest.strip_prefix(" sync done] ") {
        let seq = key(r, "seq").and_then(|v| v.parse::<u64>().ok());
        if let (Some(seq), Some(l)) = (seq, e.last_launch.as_mut()) {
            if l.seq == seq && r.contains("status=success") {
                l.completed = true;
            }
        }
        return seq.is_some();
    }
    if let Some(r) = rest.strip_prefix("] T") {
        // multi-threaded per-event line: `T<tid> [<i>] <api>`
        let Some((tid, r)) = r.split_once(" [") else {
            return false;
        };
        let Ok(tid) = tid.parse::<u64>() else {
            return false;
        };
        return event_line(Some(tid), r, e);
    }
    false
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// `N: api[   -> Kernel 'name' …]` (single-threaded) or `i] api` (multi-threaded).
fn event_line(thread: Option<u64>, r: &str, e: &mut Evidence) -> bool {
    let sep = if thread.is_some() { "] " } else { ": " };
    let Some((index, tail)) = r.split_once(sep) else {
        return false;
    };
    let Ok(index) = index.parse::<u64>() else {
        return false;
    };
    let (api, suffix) = match tail.split_once(' ') {
        Some((api, suffix)) => (api, suffix),
        None => (tail, ""),
    };
    if !is_ident(api) {
        return false;
    }
    let kernel = suffix
        .split_once("-> Kernel '")
        .and_then(|(_, k)| k.rsplit_once('\''))
        .map(|(k, _)| k);
    let ev = e.last_event.get_or_insert_with(EventLine::default);
    ev.thread = thread;
    ev.index = index;
    ev.api.clear();
    ev.api.push_str(api);
    match kernel {
        Some(k) => ev.kernel = Some(k.to_string()),
        None => ev.kernel = None,
    }
    true
}

/// The value of `key=` among the space-separated tokens of `head`.
fn key<'a>(head: &'a str, key: &str) -> Option<&'a str> {
    head.split(' ').find_map(|tok| {
        let (k, v) = tok.split_once('=')?;
        (k == key).then_some(v)
    })
}

/// `(tokens before name=", the quoted name)`.
fn split_name<'a>(r: &'a str, field: &str) -> Option<(&'a str, &'a str)> {
    let (head, name) = r.split_once(field)?;
    Some((head, name.strip_suffix('"').unwrap_or(name)))
}

fn set_launch<'e>(e: &'e mut Evidence, seq: u64, ordinal: u64, name: &str) -> &'e mut Launch {
    let l = e.last_launch.get_or_insert_with(Launch::default);
    l.seq = seq;
    l.ordinal = ordinal;
    l.name.clear();
    l.name.push_str(name);
    l.completed = false;
    l
}

/// `seq=S kernel=K launch=MOD grid=[..] block=[..] shared=.. args=.. snapshots=.. name="…"`
fn launch_line(r: &str, e: &mut Evidence) -> bool {
    let Some((head, name)) = split_name(r, " name=\"") else {
        return false;
    };
    let (Some(seq), Some(ordinal)) = (
        key(head, "seq").and_then(|v| v.parse().ok()),
        key(head, "kernel").and_then(|v| v.parse().ok()),
    ) else {
        return false;
    };
    let grid = key(head, "grid");
    let block = key(head, "block");
    let l = set_launch(e, seq, ordinal, name);
    set_opt(&mut l.grid, grid);
    set_opt(&mut l.block, block);
    true
}

fn set_opt(slot: &mut Option<String>, v: Option<&str>) {
    match (slot.as_mut(), v) {
        (Some(s), Some(v)) => {
            s.clear();
            s.push_str(v);
        }
        (None, Some(v)) => *slot = Some(v.to_string()),
        (_, None) => *slot = None,
    }
}

/// `seq=S kernel=K name="…"` (`--trace-sync`): the launch being synced.
fn sync_begin(r: &str, e: &mut Evidence) -> bool {
    let Some((head, name)) = split_name(r, " name=\"") else {
        return false;
    };
    let (Some(seq), Some(ordinal)) = (
        key(head, "seq").and_then(|v| v.parse().ok()),
        key(head, "kernel").and_then(|v| v.parse().ok()),
    ) else {
        return false;
    };
    let same = e
        .last_launch
        .as_ref()
        .is_some_and(|l| l.seq == seq && l.name == name);
    if !same {
        let l = set_launch(e, seq, ordinal, name);
        l.grid = None;
        l.block = None;
    }
    true
}

/// `elapsed_s=E seq=S kernels=K d2h_pass=P d2h_fail=F d2h_attempted=A last="…"`
fn progress_line(r: &str, e: &mut Evidence) -> bool {
    let Some((head, last)) = split_name(r, " last=\"") else {
        return false;
    };
    let num = |k: &str| key(head, k).and_then(|v| v.parse::<u64>().ok());
    let (Some(seq), Some(kernels), Some(pass), Some(fail), Some(attempted)) = (
        num("seq"),
        num("kernels"),
        num("d2h_pass"),
        num("d2h_fail"),
        num("d2h_attempted"),
    ) else {
        return false;
    };
    let p = e.progress.get_or_insert_with(Progress::default);
    p.elapsed_s = key(head, "elapsed_s")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    p.seq = seq;
    p.kernels = kernels;
    p.d2h_pass = pass;
    p.d2h_fail = fail;
    p.d2h_attempted = attempted;
    p.last.clear();
    p.last.push_str(last);
    if let Some(l) = e.last_launch.as_mut().filter(|l| l.ordinal <= kernels) {
        l.completed = true;
    }
    true
}
