//! Hand parsers for the line shapes that dominate a verbose replay log
//! (reference/playback-output.md §2c, §2d): per-event lines, argument lines,
//! `[HRR launch]`, `[HRR sync …]`, `[HRR progress]` and `Kernel '…' OK`.
//! They run on a fixed prefix, allocate nothing in the steady state (the
//! strings of the last event/launch are reused) and leave every other line to
//! the regex rules.

use super::evidence::{EventLine, Evidence, Launch, Progress};
use super::names::same_kernel;
use memchr::memmem::Finder;
use std::sync::LazyLock;

/// `rest` is the line after its leading `[HRR`. Returns true when the line
/// was one of the hot shapes (and has been applied).
pub(crate) fn apply(rest: &str, e: &mut Evidence) -> bool {
    match rest.as_bytes().first() {
        Some(b']') => bracketed(&rest[1..], e),
        Some(b' ') => tagged(&rest[1..], e),
        _ => false,
    }
}

/// `[HRR] …` lines: per-event, argument and `Kernel '…' OK` lines.
fn bracketed(r: &str, e: &mut Evidence) -> bool {
    if let Some(r) = r.strip_prefix(" Event ") {
        return event_line(None, r, e);
    }
    if let Some(r) = r.strip_prefix("   arg[") {
        if r.ends_with("(MISSING!)") {
            e.missing_args += 1;
            if e.missing_example.is_none() {
                e.missing_example = Some(format!("arg[{r}"));
            }
        }
        return true;
    }
    if let Some(r) = r.strip_prefix(" Kernel '") {
        let Some(name) = r.strip_suffix("' OK") else {
            return false;
        };
        // Printed only under --sync-after-launch, with the full name; the
        // `[HRR launch]` line may have printed it compacted.
        e.launch_sync_seen = true;
        if let Some(l) = e
            .last_launch
            .as_mut()
            .filter(|l| same_kernel(&l.name, name))
        {
            l.completed = true;
        }
        return true;
    }
    if let Some(r) = r.strip_prefix(" T") {
        // multi-threaded per-event line: `T<tid> [<i>] <api>`
        let (tid, r) = leading_number(r);
        let (Some(tid), Some(r)) = (tid, r.strip_prefix(" [")) else {
            return false;
        };
        return event_line(Some(tid), r, e);
    }
    false
}

/// `[HRR launch]`, `[HRR progress]`, `[HRR sync …]` lines.
fn tagged(r: &str, e: &mut Evidence) -> bool {
    if let Some(r) = r.strip_prefix("launch] ") {
        return launch_line(r, e);
    }
    if let Some(r) = r.strip_prefix("progress] ") {
        return progress_line(r, e);
    }
    if let Some(r) = r.strip_prefix("sync begin] ") {
        return sync_begin(r, e);
    }
    if let Some(r) = r.strip_prefix("sync done] ") {
        e.launch_sync_seen = true;
        let seq = key(r, "seq").and_then(|v| v.parse::<u64>().ok());
        if let (Some(seq), Some(l)) = (seq, e.last_launch.as_mut()) {
            if l.seq == seq && r.contains("status=success") {
                l.completed = true;
            }
        }
        return seq.is_some();
    }
    false
}

/// The decimal number at the start of `s` and the rest.
fn leading_number(s: &str) -> (Option<u64>, &str) {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    (s[..digits].parse().ok(), &s[digits..])
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

static KERNEL_SUFFIX: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new("-> Kernel '"));

/// `N: api[   -> Kernel 'name' …]` (single-threaded) or `i] api` (multi-threaded).
fn event_line(thread: Option<u64>, r: &str, e: &mut Evidence) -> bool {
    let sep = if thread.is_some() { "] " } else { ": " };
    let (index, tail) = leading_number(r);
    let (Some(index), Some(tail)) = (index, tail.strip_prefix(sep)) else {
        return false;
    };
    let api_len = memchr::memchr(b' ', tail.as_bytes()).unwrap_or(tail.len());
    let (api, suffix) = tail.split_at(api_len);
    if !is_ident(api) {
        return false;
    }
    let kernel = KERNEL_SUFFIX
        .find(suffix.as_bytes())
        .and_then(|at| suffix[at + "-> Kernel '".len()..].rsplit_once('\''))
        .map(|(k, _)| k);
    let ev = e.last_event.get_or_insert_with(EventLine::default);
    ev.thread = thread;
    ev.index = index;
    ev.api.clear();
    ev.api.push_str(api);
    ev.kernel = kernel.map(str::to_string);
    true
}

/// The value of `key=` among the space-separated tokens of `head`.
fn key<'a>(head: &'a str, key: &str) -> Option<&'a str> {
    fields(head).find_map(|(k, v)| (k == key).then_some(v))
}

/// The `key=value` tokens of `head`, split on bytes (one pass, no searcher
/// set-up per token: these lines come once per launch).
fn fields(head: &str) -> impl Iterator<Item = (&str, &str)> {
    head.as_bytes().split(|&b| b == b' ').filter_map(|tok| {
        let eq = tok.iter().position(|&b| b == b'=')?;
        // both halves are ASCII-delimited slices of a &str
        let k = std::str::from_utf8(&tok[..eq]).ok()?;
        let v = std::str::from_utf8(&tok[eq + 1..]).ok()?;
        Some((k, v))
    })
}

/// `(tokens before name=", the quoted name)`.
fn split_name<'a>(r: &'a str, field: &Finder<'_>) -> Option<(&'a str, &'a str)> {
    let at = field.find(r.as_bytes())?;
    let (head, name) = (&r[..at], &r[at + field.needle().len()..]);
    Some((head, name.strip_suffix('"').unwrap_or(name)))
}

static NAME_FIELD: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(" name=\""));
static LAST_FIELD: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(" last=\""));

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
    let Some((head, name)) = split_name(r, &NAME_FIELD) else {
        return false;
    };
    let (mut seq, mut ordinal, mut grid, mut block) = (None, None, None, None);
    for (k, v) in fields(head) {
        match k {
            "seq" => seq = v.parse().ok(),
            "kernel" => ordinal = v.parse().ok(),
            "grid" => grid = Some(v),
            "block" => block = Some(v),
            _ => {}
        }
    }
    let (Some(seq), Some(ordinal)) = (seq, ordinal) else {
        return false;
    };
    e.launch_lines += 1;
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
    let Some((head, name)) = split_name(r, &NAME_FIELD) else {
        return false;
    };
    let (Some(seq), Some(ordinal)) = (
        key(head, "seq").and_then(|v| v.parse().ok()),
        key(head, "kernel").and_then(|v| v.parse().ok()),
    ) else {
        return false;
    };
    e.launch_sync_seen = true;
    let same = e
        .last_launch
        .as_ref()
        .is_some_and(|l| l.seq == seq && same_kernel(&l.name, name));
    if !same {
        e.launch_lines += 1;
        let l = set_launch(e, seq, ordinal, name);
        l.grid = None;
        l.block = None;
    }
    true
}

/// `elapsed_s=E seq=S kernels=K d2h_pass=P d2h_fail=F d2h_attempted=A last="…"`
fn progress_line(r: &str, e: &mut Evidence) -> bool {
    let Some((head, last)) = split_name(r, &LAST_FIELD) else {
        return false;
    };
    let mut n: [Option<u64>; 5] = [None; 5];
    let mut elapsed = 0.0;
    for (k, v) in fields(head) {
        let slot = match k {
            "seq" => 0,
            "kernels" => 1,
            "d2h_pass" => 2,
            "d2h_fail" => 3,
            "d2h_attempted" => 4,
            "elapsed_s" => {
                elapsed = v.parse().unwrap_or(0.0);
                continue;
            }
            _ => continue,
        };
        n[slot] = v.parse().ok();
    }
    let [Some(seq), Some(kernels), Some(pass), Some(fail), Some(attempted)] = n else {
        return false;
    };
    let p = e.progress.get_or_insert_with(Progress::default);
    p.elapsed_s = elapsed;
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
