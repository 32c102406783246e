//! Findings grouped by crash signature: the same fault in the same kernel,
//! whatever the pid or path it was captured under, is one group.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::SystemTime;

use serde::Serialize;

use super::load::{Loaded, Skipped};
use crate::archive::modified::{events_bin_modified, rfc3339};
use crate::finding::{FaultClass, Finding, Label, Outcome};
use crate::render::{class_name, outcome_word};

/// The report's JSON schema version.
pub const SCHEMA_VERSION: u32 = 1;

/// Labels about the run or the capture root, not the crash, which the
/// signature leaves out: a player built for the run, a root of several
/// processes.
pub const NOT_IN_SIGNATURE: [Label; 2] = [Label::MultiProcess, Label::BuildNeeded];

/// Archives named per group.
pub const EXAMPLES: usize = 3;

/// The most entries of a capture root examined for its processes' times.
const ROOT_ENTRIES: usize = 4096;

/// What makes two findings the same crash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Signature {
    /// What happened.
    pub outcome: Outcome,
    /// Why.
    pub fault_class: FaultClass,
    /// The implicated kernel, full name; null when none was named.
    pub kernel_name: Option<String>,
    /// HIP API of the failing event.
    pub failing_api: Option<String>,
    /// The finding's labels except MULTI-PROCESS and BUILD-NEEDED, in the
    /// documented order.
    pub labels: Vec<Label>,
}

impl Signature {
    /// The signature of `f`.
    pub fn of(f: &Finding) -> Signature {
        let labels: BTreeSet<Label> = f
            .labels
            .iter()
            .map(|e| e.label)
            .filter(|l| !NOT_IN_SIGNATURE.contains(l))
            .collect();
        Signature {
            outcome: f.outcome,
            fault_class: f.fault_class,
            kernel_name: f.kernel_name.clone(),
            failing_api: f.failing_api.clone(),
            labels: labels.into_iter().collect(),
        }
    }

    /// The order of signatures: by their documented spellings, byte-wise.
    fn key(&self) -> SignatureKey {
        (
            outcome_word(self.outcome),
            class_name(self.fault_class),
            self.kernel_name.clone(),
            self.failing_api.clone(),
            self.labels.clone(),
        )
    }
}

type SignatureKey = (
    &'static str,
    String,
    Option<String>,
    Option<String>,
    Vec<Label>,
);

/// The findings of one signature.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Group {
    /// What the findings share.
    pub signature: Signature,
    /// How many findings.
    pub count: u64,
    /// The first few archives, byte-sorted.
    pub examples: Vec<String>,
    /// The oldest `events.bin` modification time (RFC 3339 UTC); null when
    /// no finding's archive has one.
    pub oldest: Option<String>,
    /// The newest `events.bin` modification time.
    pub newest: Option<String>,
    /// The fault classes seen.
    pub fault_classes: Vec<FaultClass>,
    /// Every label seen, MULTI-PROCESS and BUILD-NEEDED included.
    pub labels: Vec<Label>,
}

impl Group {
    /// The labels seen in the group that its signature leaves out.
    pub fn also_seen(&self) -> Vec<Label> {
        self.labels
            .iter()
            .copied()
            .filter(|l| NOT_IN_SIGNATURE.contains(l))
            .collect()
    }
}

/// How many findings had one outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct OutcomeCount {
    /// The outcome.
    pub outcome: Outcome,
    /// Findings with it.
    pub count: u64,
}

/// The `hrr report` document.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// Always [`SCHEMA_VERSION`].
    #[schemars(extend("const" = SCHEMA_VERSION))]
    pub schema_version: u32,
    /// Findings read.
    pub findings: u64,
    /// Files read.
    pub files: u64,
    /// Files (or lines of JSON Lines files) that held no finding.
    pub skipped: Vec<Skipped>,
    /// Findings per outcome, most first (then in the documented order).
    pub outcomes: Vec<OutcomeCount>,
    /// The groups, largest first, then by signature.
    pub groups: Vec<Group>,
}

/// What is gathered for a group while findings are read.
struct Tally {
    signature: Signature,
    count: u64,
    examples: BTreeSet<String>,
    times: Vec<SystemTime>,
    fault_classes: Vec<FaultClass>,
    labels: BTreeSet<Label>,
}

/// Groups `loaded` into the report.
pub fn group(loaded: Loaded) -> Report {
    let mut tallies: BTreeMap<SignatureKey, Tally> = BTreeMap::new();
    let mut outcomes: Vec<OutcomeCount> = Vec::new();
    for f in &loaded.findings {
        let signature = Signature::of(f);
        let t = tallies.entry(signature.key()).or_insert_with(|| Tally {
            signature,
            count: 0,
            examples: BTreeSet::new(),
            times: Vec::new(),
            fault_classes: Vec::new(),
            labels: BTreeSet::new(),
        });
        t.count += 1;
        if let Some(archive) = &f.archive {
            t.examples.insert(archive.clone());
            if t.examples.len() > EXAMPLES {
                t.examples.pop_last();
            }
        }
        t.times.extend(modified_times(f));
        if !t.fault_classes.contains(&f.fault_class) {
            t.fault_classes.push(f.fault_class);
        }
        t.labels.extend(f.labels.iter().map(|e| e.label));
        match outcomes.iter_mut().find(|o| o.outcome == f.outcome) {
            Some(o) => o.count += 1,
            None => outcomes.push(OutcomeCount {
                outcome: f.outcome,
                count: 1,
            }),
        }
    }
    outcomes.sort_by_key(|o| (std::cmp::Reverse(o.count), o.outcome as u8));
    let mut groups: Vec<(SignatureKey, Group)> = tallies
        .into_iter()
        .map(|(key, t)| {
            let group = Group {
                signature: t.signature,
                count: t.count,
                examples: t.examples.into_iter().collect(),
                oldest: t.times.iter().min().copied().and_then(rfc3339),
                newest: t.times.iter().max().copied().and_then(rfc3339),
                fault_classes: t.fault_classes,
                labels: t.labels.into_iter().collect(),
            };
            (key, group)
        })
        .collect();
    groups.sort_by(|(ka, a), (kb, b)| b.count.cmp(&a.count).then_with(|| ka.cmp(kb)));
    Report {
        schema_version: SCHEMA_VERSION,
        findings: loaded.findings.len() as u64,
        files: loaded.files,
        skipped: loaded.skipped,
        outcomes,
        groups: groups.into_iter().map(|(_, g)| g).collect(),
    }
}

/// When the finding's archive was captured: `archive_health.events_modified`
/// when it holds an RFC 3339 time, else the modification time of
/// `<archive>/events.bin`, or of each `pid-*/events.bin` of a root, when
/// the archive is on this host; else none.
fn modified_times(f: &Finding) -> Vec<SystemTime> {
    let recorded = f
        .archive_health
        .events_modified
        .as_deref()
        .and_then(|t| humantime::parse_rfc3339(t).ok());
    if let Some(t) = recorded {
        return vec![t];
    }
    let Some(archive) = f.archive.as_deref().map(Path::new) else {
        return Vec::new();
    };
    if let Some(t) = events_bin_modified(archive) {
        return vec![t];
    }
    let Ok(entries) = std::fs::read_dir(archive) else {
        return Vec::new();
    };
    entries
        .take(ROOT_ENTRIES)
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("pid-"))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| events_bin_modified(&e.path()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::LabelEntry;

    fn maf(archive: &str, labels: &[Label]) -> Finding {
        let mut f = Finding::new(Some(archive.into()));
        f.outcome = Outcome::Maf;
        f.fault_class = FaultClass::IllegalMemoryAccess;
        f.kernel_name = Some("void k<int>(int*)".into());
        f.labels = labels
            .iter()
            .map(|&label| LabelEntry {
                label,
                detail: String::new(),
            })
            .collect();
        f
    }

    fn report(findings: Vec<Finding>) -> Report {
        group(Loaded {
            findings,
            files: 1,
            skipped: Vec::new(),
        })
    }

    #[test]
    fn pid_path_and_run_labels_do_not_split_a_group() {
        let r = report(vec![
            maf("/n2/c.hrr/pid-9", &[Label::NoopApi, Label::MultiProcess]),
            maf("/n1/c.hrr/pid-4", &[Label::BuildNeeded, Label::NoopApi]),
            maf("/n3/c.hrr/pid-7", &[Label::NoopApi]),
            maf("/n0/c.hrr/pid-1", &[Label::NoopApi]),
            maf("/n9/c.hrr/pid-2", &[]),
        ]);
        assert_eq!(r.groups.len(), 2);
        let g = &r.groups[0];
        assert_eq!(g.count, 4);
        assert_eq!(g.signature.labels, [Label::NoopApi]);
        assert_eq!(
            g.examples,
            ["/n0/c.hrr/pid-1", "/n1/c.hrr/pid-4", "/n2/c.hrr/pid-9"]
        );
        assert_eq!(
            g.labels,
            [Label::NoopApi, Label::BuildNeeded, Label::MultiProcess]
        );
        assert_eq!(g.fault_classes, [FaultClass::IllegalMemoryAccess]);
        assert_eq!(r.groups[1].count, 1);
        assert_eq!(
            r.outcomes,
            [OutcomeCount {
                outcome: Outcome::Maf,
                count: 5
            }]
        );
    }

    #[test]
    fn groups_sort_by_count_then_signature() {
        let mut hang = Finding::new(Some("/h".into()));
        hang.outcome = Outcome::Hang;
        hang.fault_class = FaultClass::Hang;
        let mut other = maf("/b", &[]);
        other.kernel_name = Some("a_kernel".into());
        let r = report(vec![maf("/a", &[]), hang.clone(), other, hang]);
        let kernels: Vec<_> = r
            .groups
            .iter()
            .map(|g| (g.count, g.signature.kernel_name.as_deref()))
            .collect();
        assert_eq!(
            kernels,
            [
                (2, None),
                (1, Some("a_kernel")),
                (1, Some("void k<int>(int*)"))
            ]
        );
        let outcomes: Vec<_> = r.outcomes.iter().map(|o| (o.outcome, o.count)).collect();
        assert_eq!(
            outcomes,
            [(Outcome::Maf, 2), (Outcome::Hang, 2)],
            "a tie goes in the documented order"
        );
    }

    #[test]
    fn times_come_from_the_finding_else_from_events_bin() {
        let root = tempfile::tempdir().unwrap();
        for pid in ["pid-1", "pid-2"] {
            std::fs::create_dir(root.path().join(pid)).unwrap();
            std::fs::write(root.path().join(pid).join("events.bin"), b"EHRR").unwrap();
        }
        let mut recorded = maf("/gone/pid-3", &[]);
        recorded.archive_health.events_modified = Some("2001-02-03T04:05:06Z".into());
        let mut garbled = maf("/gone/pid-4", &[]);
        garbled.archive_health.events_modified = Some("yesterday".into());
        let on_disk = maf(&root.path().join("pid-1").display().to_string(), &[]);
        let a_root = maf(&root.path().display().to_string(), &[]);
        let r = report(vec![recorded, garbled, on_disk, a_root]);
        let g = &r.groups[0];
        assert_eq!(g.oldest.as_deref(), Some("2001-02-03T04:05:06Z"));
        let newest = g.newest.as_deref().unwrap();
        assert!(newest > "2020" && newest.ends_with('Z'), "{newest}");
        let only_gone = report(vec![maf("/gone/pid-5", &[])]);
        assert_eq!(only_gone.groups[0].oldest, None);
    }
}
