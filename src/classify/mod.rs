//! The classifier: replay logs, `hrr-playback --info` dumps and the archive's
//! own summary in, a [`Finding`] out (DESIGN §2 "classify", §6).
//!
//! Each input is read once, line by line, through a fixed-size buffer: a line
//! longer than [`LINE_CAP`] is examined by its head only and the rest is
//! skipped without being stored, and invalid UTF-8 is replaced rather than
//! rejected, so a multi-gigabyte log with binary garbage costs bounded
//! memory. Lines feed an [`Evidence`] record ([`rules`]); [`finalize`] then
//! applies the upstream precedence and the finding rules once, after every
//! input has been read, so input order does not matter.

mod advice;
pub mod archive_summary;
mod attribution;
pub mod evidence;
mod finalize;
mod hot_lines;
mod info_tables;
mod inputs;
mod names;
mod preflight_view;
mod rules;

pub use archive_summary::ArchiveFacts;
pub use evidence::Evidence;
pub use inputs::{archive_facts, archive_root, summary_facts, Inputs};

use crate::finding::{Finding, ReplayInfo};
use std::io::{self, BufRead};
use std::path::PathBuf;

/// Bytes of a single line that are examined; the rest of an overlong line
/// is skipped. Every line shape of the reference fits in far less.
pub const LINE_CAP: usize = 64 * 1024;

/// Read buffer per input.
const READ_BUFFER: usize = 256 * 1024;

/// What was read from one input.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct InputRecord {
    /// Path or name of the input, as given.
    pub source: String,
    /// It carried an `hrr-playback --info` header.
    pub info_dump: bool,
    /// Lines in it that only a replay prints.
    pub replay_lines: u64,
}

/// Streaming classifier: feed inputs line by line, then [`Classifier::finish`].
#[derive(Debug, Default)]
pub struct Classifier {
    evidence: Evidence,
    state: rules::InputState,
    inputs: Vec<InputRecord>,
    pending: Vec<u8>,
    replay_skipped: bool,
}

impl Classifier {
    /// A classifier with no evidence yet.
    pub fn new() -> Self {
        Classifier::default()
    }

    /// Start a new input named `source` (a path, or any label for tests).
    /// `--info` table state does not carry over from the previous input.
    pub fn begin_input(&mut self, source: impl Into<String>) {
        self.end_input();
        self.inputs.push(InputRecord {
            source: source.into(),
            ..InputRecord::default()
        });
    }

    fn end_input(&mut self) {
        if let Some(rec) = self.inputs.last_mut() {
            rec.info_dump = self.state.info_dump;
            rec.replay_lines = self.state.replay_lines;
        }
        self.state = rules::InputState::default();
    }

    /// Feed one line without its terminator. Invalid UTF-8 is replaced;
    /// only the first [`LINE_CAP`] bytes are examined.
    pub fn feed_line(&mut self, line: &[u8]) {
        if self.inputs.is_empty() {
            self.begin_input("<input>");
        }
        self.evidence.bytes += line.len() as u64 + 1;
        self.process(line, line.len() > LINE_CAP);
    }

    fn process(&mut self, line: &[u8], overlong: bool) {
        let line = if overlong {
            self.evidence.long_lines += 1;
            &line[..line.len().min(LINE_CAP)]
        } else {
            line
        };
        self.evidence.lines += 1;
        // Valid UTF-8 (nearly every line) is checked by the fast validator
        // and borrowed; only a line with invalid bytes is copied and repaired.
        match std::str::from_utf8(line) {
            Ok(text) => rules::apply(text, &mut self.evidence, &mut self.state),
            Err(_) => {
                let text = String::from_utf8_lossy(line);
                rules::apply(&text, &mut self.evidence, &mut self.state);
            }
        }
    }

    /// Feed a whole input, one pass, through its buffer. Lines are processed
    /// in place in the reader's buffer; only a line that straddles two
    /// buffer fills is copied, and never more than [`LINE_CAP`] bytes of it.
    pub fn feed_reader<R: BufRead>(&mut self, mut reader: R) -> io::Result<()> {
        if self.inputs.is_empty() {
            self.begin_input("<input>");
        }
        let mut pending = std::mem::take(&mut self.pending);
        pending.clear();
        let mut overlong = false;
        loop {
            let buf = match reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                break;
            }
            let n = buf.len();
            self.evidence.bytes += n as u64;
            let mut start = 0;
            for nl in memchr::memchr_iter(b'\n', buf) {
                let piece = &buf[start..nl];
                if pending.is_empty() && !overlong {
                    self.process(piece, piece.len() > LINE_CAP);
                } else {
                    overlong |= append_capped(&mut pending, piece);
                    self.process(&pending, overlong);
                    pending.clear();
                    overlong = false;
                }
                start = nl + 1;
            }
            overlong |= append_capped(&mut pending, &buf[start..]);
            reader.consume(n);
        }
        if !pending.is_empty() || overlong {
            self.process(&pending, overlong);
        }
        pending.clear();
        self.pending = pending;
        Ok(())
    }

    /// Tell the classifier the caller deliberately ran no replay
    /// (metadata-only triage). With no replay evidence the class is then
    /// `metadata_only` even when the preflight report says `blocked`.
    pub fn set_replay_skipped(&mut self, skipped: bool) {
        self.replay_skipped = skipped;
    }

    /// The evidence gathered so far.
    pub fn evidence(&self) -> &Evidence {
        &self.evidence
    }

    /// Decide: precedence, finding rules, labels, notes and next steps.
    pub fn finish(
        mut self,
        archive: Option<&ArchiveFacts>,
        replay: Option<&ReplayInfo>,
        preflight: Option<&serde_json::Value>,
    ) -> Finding {
        self.end_input();
        let how = finalize::Inputs {
            inputs: &self.inputs,
            replay_skipped: self.replay_skipped,
        };
        finalize::finalize(&self.evidence, &how, archive, replay, preflight)
    }
}

/// Append up to the cap; true when something had to be dropped.
fn append_capped(pending: &mut Vec<u8>, piece: &[u8]) -> bool {
    let room = LINE_CAP.saturating_sub(pending.len());
    let take = piece.len().min(room);
    pending.extend_from_slice(&piece[..take]);
    take < piece.len()
}

/// Classify replay logs and/or `--info` dumps (any number, any order),
/// optionally with the archive summary, the replay runner's report and the
/// preflight report: [`Inputs::classify`] with a replay that was run (or
/// not asked about).
pub fn classify(
    logs: &[PathBuf],
    archive: Option<&ArchiveFacts>,
    replay: Option<&ReplayInfo>,
    preflight: Option<&serde_json::Value>,
) -> anyhow::Result<Finding> {
    Inputs {
        logs,
        archive,
        replay,
        preflight,
        metadata_only: false,
    }
    .classify()
}
