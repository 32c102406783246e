//! The health verdicts of one pass: what the stream, the manifest and the
//! files say about whether the archive is whole, as [`Problem`]s in plain
//! words (DESIGN §3.2 `problems`).

use crate::archive::format::manifest::{ManifestState, ProcessState};
use crate::archive::summary::document::{ArchiveSummary, Problem};
use crate::archive::summary::pass::StreamOutcome;
use crate::archive::summary::tally::Tally;

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub(in crate::archive) fn health(
    s: &mut ArchiveSummary,
    m: &ManifestState,
    t: &Tally,
    o: &StreamOutcome,
) {
    let mut p = Vec::new();
    if let Some((was, now)) = o.cut_short {
        p.push(Problem::new(
            "truncated_while_reading",
            format!(
                "events.bin was cut from {was} to {now} bytes by another program while hrr read it; what was read after the cut reads as zeros, so the counts cover the stream up to the cut only. Read it again once nothing writes to it"
            ),
        ));
    }
    if let Some(torn) = o.torn {
        p.push(Problem::new(
            "torn_tail",
            format!(
                "the last record is torn ({torn}); {} recovered before it",
                plural(t.events, "complete event was", "complete events were")
            ),
        ));
    }
    match o.trailer {
        None => p.push(Problem::new(
            "no_trailer",
            "no clean-shutdown trailer: the capture was interrupted (crash or kill) or the writer marked it incomplete",
        )),
        Some(n) if n != t.events => p.push(Problem::new(
            "trailer_count_mismatch",
            format!(
                "the trailer counts {} but {} read before it: events were lost",
                plural(n, "event", "events"),
                plural(t.events, "was", "were")
            ),
        )),
        Some(_) => {}
    }
    if o.after_trailer > 0 {
        p.push(Problem::new(
            "records_after_trailer",
            format!(
                "{} after the trailer (appended at shutdown by an old runtime); counted, not decoded or replayed",
                plural(o.after_trailer, "record follows", "records follow")
            ),
        ));
    }
    if let Some(tail) = o.bytes_after_trailer {
        // The upstream reader counts only whole records after a valid
        // trailer and stops at a shorter tail without setting `truncated`
        // (playback-output.md §10.7): the capture ended cleanly.
        p.push(Problem::new(
            "bytes_after_trailer",
            format!(
                "after the clean-shutdown trailer, {tail}; hrr-playback's reader stops counting there too, so this is not a torn tail and the archive stays complete"
            ),
        ));
    }
    match m {
        ManifestState::Missing => p.push(Problem::new(
            "no_manifest",
            "no manifest.json: the process was killed before it could finalise the archive (recorded, not finalised)",
        )),
        ManifestState::Unreadable(why) => p.push(Problem::new("manifest_unreadable", why.clone())),
        ManifestState::Present(v) => {
            if let Some(why) = manifest_field_problems(v) {
                p.push(Problem::new("manifest_invalid", why));
            }
            if s.state == ProcessState::Complete && !s.complete {
                s.state = ProcessState::Incomplete;
                p.push(Problem::new(
                    "manifest_contradicted",
                    "manifest.json says complete, but the event stream has no matching trailer",
                ));
            }
            if let Some(n) = m.int("event_count").filter(|&n| n != t.events) {
                p.push(Problem::new(
                    "manifest_event_count",
                    format!("manifest.json counts {n} events; the stream holds {}", t.events),
                ));
            }
        }
    }
    if t.undersized > 0 {
        p.push(Problem::new(
            "undersized_events",
            format!(
                "{} shorter than their documented layout: kept, not decoded",
                plural(t.undersized, "event is", "events are")
            ),
        ));
    }
    if t.unknown_ids > 0 {
        p.push(Problem::new(
            "unknown_event_types",
            format!(
                "{} with ids beyond the {} table (shown as unknown(<id>)); a writer with another API table may have produced them",
                plural(t.unknown_ids, "event has", "events have"),
                t.table.label()
            ),
        ));
    }
    p.extend(t.malformed.iter().map(|(_, m)| m.clone()));
    if t.malformed_more > 0 {
        p.push(Problem::new(
            "malformed_event",
            format!("{} more malformed events (not listed)", t.malformed_more),
        ));
    }
    if !s.blobs.missing.is_empty() {
        p.push(Problem::new(
            "missing_blobs",
            format!(
                "{} referenced by events {} no file under blobs/: the inputs or expected outputs they hold are lost",
                plural(s.blobs.missing.len() as u64, "blob", "blobs"),
                if s.blobs.missing.len() == 1 { "has" } else { "have" }
            ),
        ));
    }
    if !s.code_objects.missing.is_empty() {
        p.push(Problem::new(
            "missing_code_objects",
            format!(
                "{} referenced by events {} no file under code_objects/ (or blobs/): replay resolves those kernels by name only, or fails",
                plural(s.code_objects.missing.len() as u64, "code object", "code objects"),
                if s.code_objects.missing.len() == 1 { "has" } else { "have" }
            ),
        ));
    }
    if t.threads_capped || t.refs_capped || t.kernels.untracked > 0 {
        p.push(Problem::new(
            "tables_capped",
            format!(
                "more distinct threads, kernels or blob hashes than hrr tracks in bounded memory; {} not in the kernel table, and thread/reference counts are lower bounds",
                plural(t.kernels.untracked, "launch is", "launches are")
            ),
        ));
    }
    s.problems.extend(p);
}

/// What is wrong with the fields `hrr` reads from a parsed manifest
/// (`complete` a boolean, `pid` and `event_count` non-negative integers),
/// so an `unknown` state is explained rather than silent.
fn manifest_field_problems(v: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let type_name = |x: &Value| match x {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    let mut wrong = Vec::new();
    match v.get("complete") {
        None => wrong.push("it has no `complete` field".to_string()),
        Some(Value::Bool(_)) => {}
        Some(x) => wrong.push(format!("`complete` is {}, not a boolean", type_name(x))),
    }
    for key in ["pid", "event_count"] {
        if let Some(x) = v.get(key).filter(|x| !x.is_u64()) {
            wrong.push(format!(
                "`{key}` is {}, not a non-negative integer",
                type_name(x)
            ));
        }
    }
    (!wrong.is_empty()).then(|| {
        format!(
            "manifest.json does not have the documented fields ({}): the capture state is unknown and those fields are ignored",
            wrong.join("; ")
        )
    })
}
