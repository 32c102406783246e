//! Running totals of one pass over an event stream: API counts, threads,
//! timestamps, kernels, referenced blobs and code objects, D2H checks and
//! malformed events. Each decoder thread keeps its own [`Tally`]; they are
//! merged at the end, so nothing here depends on the order chunks arrive.
//! The allocation map's launch pointer audit runs inside the tally, as
//! each launch is parsed ([`PieceAudit`]); the map's allocations and frees
//! are taken out of each piece before it ([`crate::archive::memory::ops`]).
//!
//! Every table is capped (threads, kernels, kernel-name bytes, referenced
//! hashes): past a cap the counts become lower bounds and the summary says so.

use rustc_hash::FxHashSet;

use crate::archive::format::apis::{ApiTable, V7_COUNT};
use crate::archive::format::blobs::BlobHash;
use crate::archive::format::framing::{le_u16, le_u64, EVENT_HEADER_LEN};
use crate::archive::format::launch::{Launch, PayloadError};
use crate::archive::format::payloads::{copy, decode, summary_need, Payload, SummaryNeed};
use crate::archive::memory::ops::walked_pointers;
use crate::archive::memory::view::PieceAudit;
use crate::archive::summary::arg_shapes::ArgShapes;
use crate::archive::summary::chunks::Records;
use crate::archive::summary::document::Problem;
use crate::archive::summary::kernel_table::KernelTable;
use crate::archive::summary::prefetch::prefetch_lines;

/// Distinct thread ids tracked.
pub(in crate::archive) const MAX_THREADS: usize = 1 << 16;
/// Distinct referenced hashes tracked per kind (blobs, code objects).
pub(in crate::archive) const MAX_REFS: usize = 1 << 19;
/// Malformed events described one by one; the rest are counted.
pub(in crate::archive) const MAX_DETAILED_MALFORMED: usize = 10;

/// How many records ahead of the one being decoded the first
/// [`PREFETCH_LINES`] of a record are asked for.
const PREFETCH_RECORDS: usize = 4;
/// Cache lines of a record asked for ahead (a launch with its arguments).
const PREFETCH_LINES: usize = 4;

/// A tiny most-recently-admitted cache in front of a hash set: values that
/// repeat within the last few events skip hashing entirely.
#[derive(Default)]
struct Recent<T> {
    slots: [T; 8],
    next: usize,
}

impl<T: Copy + PartialEq> Recent<T> {
    /// True when `v` was not among the recent values (and records it).
    #[inline]
    fn admit(&mut self, v: T) -> bool {
        // Compare every slot rather than stop at the first match: which
        // slot holds a value is unpredictable, the full compare is not.
        if self.slots.iter().fold(false, |seen, &s| seen | (s == v)) {
            return false;
        }
        self.slots[self.next] = v;
        self.next = (self.next + 1) % self.slots.len();
        true
    }
}

/// Running totals of one pass.
pub(in crate::archive) struct Tally {
    pub(in crate::archive) table: ApiTable,
    /// What the summary needs from each v7 id.
    needs: Box<[SummaryNeed]>,
    pub(in crate::archive) events: u64,
    /// Events per raw `event_type` (indexing a u16 needs no bounds check).
    pub(in crate::archive) api_counts: Box<[u64; 1 << 16]>,
    pub(in crate::archive) kernel_launches: u64,
    pub(in crate::archive) threads: FxHashSet<u64>,
    /// Recently seen thread ids: most events come from a few threads, so
    /// the set is consulted only for a thread not seen lately.
    recent_threads: Recent<u64>,
    pub(in crate::archive) threads_capped: bool,
    pub(in crate::archive) first_ts: u64,
    pub(in crate::archive) last_ts: u64,
    pub(in crate::archive) kernels: KernelTable,
    /// Argument layouts of recent launches, so most are not walked.
    shapes: ArgShapes,
    pub(in crate::archive) blob_refs: FxHashSet<BlobHash>,
    pub(in crate::archive) co_refs: FxHashSet<BlobHash>,
    pub(in crate::archive) refs_capped: bool,
    pub(in crate::archive) d2h_checks: u64,
    pub(in crate::archive) undersized: u64,
    pub(in crate::archive) unknown_ids: u64,
    pub(in crate::archive) malformed: Vec<(u64, Problem)>,
    pub(in crate::archive) malformed_more: u64,
}

impl Tally {
    /// Empty totals.
    pub(in crate::archive) fn new(table: ApiTable) -> Tally {
        Tally {
            table,
            needs: (0..V7_COUNT).map(summary_need).collect(),
            events: 0,
            api_counts: vec![0; 1 << 16]
                .into_boxed_slice()
                .try_into()
                .expect("65536 counters"),
            kernel_launches: 0,
            threads: FxHashSet::default(),
            recent_threads: Recent::default(),
            threads_capped: false,
            first_ts: u64::MAX,
            last_ts: 0,
            kernels: KernelTable::new(),
            shapes: ArgShapes::default(),
            blob_refs: FxHashSet::default(),
            co_refs: FxHashSet::default(),
            refs_capped: false,
            d2h_checks: 0,
            undersized: 0,
            unknown_ids: 0,
            malformed: Vec::new(),
            malformed_more: 0,
        }
    }

    fn reference(&mut self, blob: bool, hash: BlobHash) {
        if hash.is_zero() {
            return;
        }
        let set = if blob {
            &mut self.blob_refs
        } else {
            &mut self.co_refs
        };
        if set.len() < MAX_REFS {
            set.insert(hash);
        } else if !set.contains(&hash) {
            self.refs_capped = true;
        }
    }

    /// Counts a launch of kernel `name` (name fingerprint `fp`) at file
    /// offset `offset` and the code object it names.
    fn kernel(&mut self, name: &[u8], fp: u64, code_object: BlobHash, offset: u64) {
        let co_offset = if code_object.is_zero() {
            u64::MAX
        } else {
            offset
        };
        if self.kernels.add(name, fp, 1, code_object, co_offset) {
            self.reference(false, code_object);
        }
    }

    /// Accounts every event record of a chunk or window (whole records of
    /// at least a header each, framing already checked); `audit` checks
    /// the pointers of its launches.
    pub(in crate::archive) fn records(
        &mut self,
        c: Records,
        mut audit: Option<&mut PieceAudit<'_>>,
    ) {
        for (i, record, offset) in c.indexed() {
            if let Some(&ahead) = c.starts.get(i + PREFETCH_RECORDS) {
                let ahead = ahead as usize;
                prefetch_lines::<PREFETCH_LINES>(c.buf, ahead);
            }
            let Some(head) = record.first_chunk::<EVENT_HEADER_LEN>() else {
                continue;
            };
            self.event(head, record, offset, i as u32, audit.as_deref_mut());
        }
    }

    /// Folds another worker's totals into these.
    pub(in crate::archive) fn merge(&mut self, o: Tally) {
        self.events += o.events;
        for (a, b) in self.api_counts.iter_mut().zip(o.api_counts.iter()) {
            *a += b;
        }
        self.kernel_launches += o.kernel_launches;
        self.threads_capped |= o.threads_capped;
        for t in o.threads {
            if self.threads.len() < MAX_THREADS {
                self.threads.insert(t);
            } else if !self.threads.contains(&t) {
                self.threads_capped = true;
            }
        }
        self.first_ts = self.first_ts.min(o.first_ts);
        self.last_ts = self.last_ts.max(o.last_ts);
        self.kernels.merge(o.kernels);
        self.refs_capped |= o.refs_capped;
        for h in o.blob_refs {
            self.reference(true, h);
        }
        for h in o.co_refs {
            self.reference(false, h);
        }
        self.d2h_checks += o.d2h_checks;
        self.undersized += o.undersized;
        self.unknown_ids += o.unknown_ids;
        self.malformed.extend(o.malformed);
        self.malformed.sort_by_key(|(offset, _)| *offset);
        let extra = self.malformed.len().saturating_sub(MAX_DETAILED_MALFORMED);
        self.malformed.truncate(MAX_DETAILED_MALFORMED);
        self.malformed_more += o.malformed_more + extra as u64;
    }

    /// Accounts one complete, non-trailer record: its header `head` and the
    /// whole record `bytes` at file offset `offset`, record `at` of its
    /// piece.
    #[inline]
    fn event(
        &mut self,
        head: &[u8; EVENT_HEADER_LEN],
        bytes: &[u8],
        offset: u64,
        at: u32,
        audit: Option<&mut PieceAudit<'_>>,
    ) {
        let event_type = le_u16(head, 0);
        let timestamp = le_u64(head, 10);
        let thread = le_u64(head, 18);
        self.events += 1;
        self.api_counts[usize::from(event_type)] += 1;
        if self.recent_threads.admit(thread) {
            if self.threads.len() < MAX_THREADS {
                self.threads.insert(thread);
            } else if !self.threads.contains(&thread) {
                self.threads_capped = true;
            }
        }
        self.first_ts = self.first_ts.min(timestamp);
        self.last_ts = self.last_ts.max(timestamp);
        let Some(api) = self.table.canonical(event_type) else {
            self.unknown_ids += 1;
            return;
        };
        match self.needs.get(usize::from(api)) {
            Some(SummaryNeed::Launch) => {
                self.kernel_launches += 1;
                match Launch::parse_shaped(bytes, &mut self.shapes) {
                    Ok((l, fp)) => {
                        self.kernel(l.name, fp, l.code_object, offset);
                        if let Some(a) = audit {
                            let seq = le_u64(head, 2);
                            match self.shapes.words(fp, l.num_args, l.arg_bytes()) {
                                Some(w) => a.listed(at, seq, l.name, w),
                                None => a.launch(at, seq, l.name, walked_pointers(&l)),
                            }
                        }
                        for s in l.snapshots() {
                            self.reference(true, s.blob);
                        }
                    }
                    Err(e) => self.malformed(head, offset, e),
                }
            }
            Some(&SummaryNeed::Size(expected)) => {
                if bytes.len() < expected {
                    self.undersized += 1;
                }
            }
            Some(&SummaryNeed::Copy(expected)) => {
                if bytes.len() < expected {
                    self.undersized += 1;
                } else if let Some(c) = copy(api, bytes) {
                    self.reference(true, c.blob);
                    self.reference(true, c.d2h_blob);
                    if c.d2h_check {
                        self.d2h_checks += 1;
                    }
                }
            }
            Some(SummaryNeed::Decode) => self.decoded(api, head, bytes, offset),
            Some(SummaryNeed::Nothing) | None => {}
        }
    }

    /// Accounts the references and checks of a fully decoded payload.
    fn decoded(&mut self, api: u16, head: &[u8; EVENT_HEADER_LEN], bytes: &[u8], offset: u64) {
        match decode(Some(api), bytes) {
            Payload::KernelNode(n) => self.reference(false, n.code_object),
            Payload::ModuleLoad { code_object, .. } => self.reference(false, code_object),
            Payload::FatBinary { blob, .. } | Payload::HostRegister { blob, .. } => {
                self.reference(true, blob)
            }
            Payload::Short { .. } => self.undersized += 1,
            Payload::Malformed(e) => self.malformed(head, offset, e),
            _ => {}
        }
    }

    /// Notes an event whose payload runs past its record.
    #[cold]
    fn malformed(&mut self, head: &[u8; EVENT_HEADER_LEN], offset: u64, e: PayloadError) {
        if self.malformed.len() >= MAX_DETAILED_MALFORMED {
            self.malformed_more += 1;
            return;
        }
        let name = self.table.display_name(le_u16(head, 0));
        let sequence_id = le_u64(head, 2);
        self.malformed.push((
            offset,
            Problem::new(
                "malformed_event",
                format!(
                    "event seq {sequence_id} ({name}) at offset {offset}: {e}; kept as an event, payload not decoded"
                ),
            ),
        ));
    }
}
