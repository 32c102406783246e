//! Kernel names as hrr-playback prints them (reference/playback-output.md
//! §10.2). `[HRR launch] … name="…"`, the watchdog's `at: kernel #N "…"`
//! and `[HRR progress] … last="…"` print `compact_kernel_name(name)`: a name
//! longer than 120 characters becomes its first 96 characters, `...` and its
//! last 21. Such a string is not a kernel name. It is expanded to the one
//! full name of the archive's kernel table with that beginning and end, and
//! only when that table holds every kernel the archive launches; otherwise
//! no name is taken from it.

use super::archive_summary::ArchiveFacts;

/// Names longer than this are printed compacted.
const LIMIT: usize = 120;
/// Bytes kept from the start of a compacted name.
const HEAD: usize = 96;
/// Bytes kept from its end.
const TAIL: usize = 21;
const ELLIPSIS: &[u8] = b"...";

/// Whether `printed` has the shape of a compacted name: exactly 120 bytes
/// with `...` after the first 96. (A real name of at most 120 bytes is
/// printed as it is; one of exactly 120 with `...` at that place is not a
/// name a compiler produces.)
pub(crate) fn is_compacted(printed: &str) -> bool {
    let b = printed.as_bytes();
    b.len() == HEAD + ELLIPSIS.len() + TAIL && &b[HEAD..HEAD + ELLIPSIS.len()] == ELLIPSIS
}

/// What the player prints for the full name `full` (byte-wise, as its
/// `std::string` code does; a cut through a multi-byte character is
/// replaced, as the classifier's line reader would).
#[cfg(test)]
pub(crate) fn compact(full: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    let b = full.as_bytes();
    if b.len() <= LIMIT {
        return Cow::Borrowed(full);
    }
    let mut out = Vec::with_capacity(LIMIT);
    out.extend_from_slice(&b[..HEAD]);
    out.extend_from_slice(ELLIPSIS);
    out.extend_from_slice(&b[b.len() - TAIL..]);
    Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

/// Whether the compacted `printed` can stand for the full name `full`.
fn expands_to(printed: &str, full: &str) -> bool {
    let (p, f) = (printed.as_bytes(), full.as_bytes());
    f.len() > LIMIT && f[..HEAD] == p[..HEAD] && f[f.len() - TAIL..] == p[HEAD + ELLIPSIS.len()..]
}

/// Whether `printed` (a name from a line that compacts) and `other` (from
/// any line: full, or compacted too) name the same kernel as far as the two
/// strings can tell.
pub(crate) fn same_kernel(printed: &str, other: &str) -> bool {
    // No allocation: this runs once per `Kernel '…' OK` line.
    printed == other
        || (is_compacted(printed) && expands_to(printed, other))
        || (is_compacted(other) && expands_to(other, printed))
}

/// What a printed name stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// Printed whole.
    Full(String),
    /// Printed compacted and expanded through the archive's kernel table.
    Expanded {
        /// As printed.
        printed: String,
        /// The one full name that matches.
        full: String,
    },
    /// Printed compacted; no single kernel of a complete table matches.
    Unresolved {
        /// As printed.
        printed: String,
        /// Why it stays unnamed, as a clause.
        why: String,
    },
}

impl Resolved {
    /// The kernel name to report, if any.
    pub(crate) fn name(&self) -> Option<&str> {
        match self {
            Resolved::Full(n) => Some(n),
            Resolved::Expanded { full, .. } => Some(full),
            Resolved::Unresolved { .. } => None,
        }
    }

    /// The note that says how a compacted name was read (none for a full one).
    pub(crate) fn note(&self) -> Option<String> {
        match self {
            Resolved::Full(_) => None,
            Resolved::Expanded { printed, full } => Some(format!(
                "hrr-playback printed a kernel name shortened to its first 96 and last 21 characters ({printed}); it was expanded to the one kernel of the archive's kernel table with that beginning and end: {full}."
            )),
            Resolved::Unresolved { printed, why } => Some(format!(
                "hrr-playback printed a kernel name shortened to its first 96 and last 21 characters ({printed}); {why}, so no kernel is named from that line."
            )),
        }
    }
}

/// Reads the printed name `printed` against the archive's kernel table.
pub(crate) fn resolve(printed: &str, archive: Option<&ArchiveFacts>) -> Resolved {
    if !is_compacted(printed) {
        return Resolved::Full(printed.to_string());
    }
    let unresolved = |why: String| Resolved::Unresolved {
        printed: printed.to_string(),
        why,
    };
    let Some(a) = archive else {
        return unresolved("the archive is not known here to expand it".into());
    };
    if !a.kernel_table_complete() {
        return unresolved(
            "the archive's kernel table does not hold every kernel it launches, so it cannot be expanded safely"
                .into(),
        );
    }
    let mut matches = a.kernels.iter().filter(|k| expands_to(printed, &k.name));
    match (matches.next(), matches.next()) {
        (Some(k), None) => Resolved::Expanded {
            printed: printed.to_string(),
            full: k.name.clone(),
        },
        (None, _) => unresolved("no kernel of the archive has that beginning and end".into()),
        (Some(_), Some(_)) => {
            let n = 2 + matches.count();
            unresolved(format!(
                "{n} kernels of the archive have that beginning and end"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long(middle: &str) -> String {
        format!("{}{middle}{}", "A".repeat(100), "Z".repeat(30))
    }

    #[test]
    fn compaction_follows_the_player() {
        let full = long("m");
        let c = compact(&full);
        assert_eq!(c.len(), 120);
        assert!(is_compacted(&c));
        assert_eq!(&c[..96], &full[..96]);
        assert_eq!(&c[99..], &full[full.len() - 21..]);
        let short = "x".repeat(120);
        assert_eq!(compact(&short), short.as_str());
        assert!(!is_compacted(&short));
        assert!(!is_compacted("Cijk_..._SK3"));
    }

    #[test]
    fn same_kernel_sees_through_compaction() {
        let full = long("m");
        assert!(same_kernel(&compact(&full), &full));
        assert!(same_kernel(&full, &compact(&full)));
        assert!(!same_kernel(&compact(&full), "other"));
    }

    fn facts(names: &[&str]) -> ArchiveFacts {
        let kernels: Vec<serde_json::Value> = names
            .iter()
            .map(|n| serde_json::json!({"name": n, "launches": 1}))
            .collect();
        serde_json::from_value(serde_json::json!({
            "kind": "process", "kernel_launches": names.len(), "kernels": kernels
        }))
        .unwrap()
    }

    #[test]
    fn expansion_needs_one_match_in_a_complete_table() {
        let (a, b) = (long("one"), long("two"));
        let printed = compact(&a).into_owned();
        assert_eq!(printed, compact(&b), "both compact alike");
        assert_eq!(resolve("plain", None), Resolved::Full("plain".into()));
        assert!(resolve(&printed, None).name().is_none());
        let one = facts(&[&a, "other"]);
        assert_eq!(resolve(&printed, Some(&one)).name(), Some(a.as_str()));
        let two = facts(&[&a, &b]);
        let r = resolve(&printed, Some(&two));
        assert!(r.name().is_none());
        assert!(r.note().unwrap().contains("2 kernels"));
        let mut cut = facts(&[&a]);
        cut.kernel_launches = Some(5);
        assert!(resolve(&printed, Some(&cut)).name().is_none());
        assert!(resolve(&printed, Some(&facts(&["other"]))).name().is_none());
    }
}
