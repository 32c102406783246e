//! Decoded events for `hrr archive events`: a stream of [`DecodedEvent`]s in
//! file order, each with its header fields, API name and the decoded fields
//! of the payloads `hrr` knows (allocations, frees, copies, launches, module
//! loads, fat binaries, …).

use std::fs;
use std::io::Read;
use std::path::Path;

use anyhow::{bail, Context as _};
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::archive::format::apis::ApiTable;
use crate::archive::format::blobs::BlobHash;
use crate::archive::format::framing::{
    FileHeader, RecordReader, Torn, DEFAULT_CHUNK, EVENTS_MAGIC, FILE_HEADER_LEN,
};
use crate::archive::format::launch::{ArgKind, Args};
use crate::archive::format::payloads::{decode, memcpy_kind_name, Payload};

/// One event as printed by `archive events --json` (one JSON line); `hrr
/// schema events` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct DecodedEvent {
    /// `sequence_id`.
    pub seq: u64,
    /// OS thread id.
    pub thread: u64,
    /// CLOCK_MONOTONIC nanoseconds.
    pub timestamp_ns: u64,
    /// Raw `event_type`.
    pub id: u16,
    /// API name, or `unknown(<id>)`.
    pub api: String,
    /// File offset of the record.
    pub offset: u64,
    /// Record length (`payload_length`).
    pub length: u32,
    /// Decoded payload fields (none when the layout is not known); which
    /// fields appear depends on the API.
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

impl DecodedEvent {
    /// One human-readable line: seq, thread, API, then `key=value` fields.
    pub fn text_line(&self) -> String {
        let mut line = format!("{:>8}  tid {:<8} {}", self.seq, self.thread, self.api);
        for (k, v) in &self.fields {
            let v = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            line.push_str(&format!("  {k}={v}"));
        }
        line
    }
}

/// How the stream ended, known once the iterator is exhausted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamEnd {
    /// Trailer count, when a valid trailer was read.
    pub trailer: Option<u64>,
    /// Records after the trailer (not decoded).
    pub after_trailer: u64,
    /// Torn tail, if any.
    pub torn: Option<Torn>,
    /// A tail after a valid trailer that is no whole record: not a torn
    /// tail (playback-output.md §10.7), so never in `torn`.
    pub bytes_after_trailer: Option<Torn>,
    /// Events yielded or skipped by filters (complete, before the trailer).
    pub events: u64,
}

/// Streaming decoder over one process archive's `events.bin`.
pub struct Events {
    reader: RecordReader<fs::File>,
    table: ApiTable,
    end: StreamEnd,
    finished: bool,
}

impl Events {
    /// Opens `events.bin` of a process directory. Bad magic, a short file or
    /// a version other than 6, 7 or 8 is an error naming what to do.
    pub fn open(process_dir: &Path) -> anyhow::Result<Events> {
        let path = process_dir.join("events.bin");
        let mut file =
            fs::File::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
        let len = file.metadata()?.len();
        let mut head = [0u8; FILE_HEADER_LEN];
        if len < FILE_HEADER_LEN as u64 || file.read_exact(&mut head).is_err() {
            bail!(
                "{} is shorter than its 8-byte header: nothing to decode",
                path.display()
            );
        }
        let header = FileHeader::parse(&head).context("short header")?;
        if header.magic != EVENTS_MAGIC {
            bail!(
                "{} does not start with the HRR magic \"EHRR\": not an HRR event stream",
                path.display()
            );
        }
        let Some(table) = ApiTable::for_version(header.version) else {
            bail!(
                "{} is format version {}; hrr decodes formats 6, 7 and 8 only (re-capture, or use the hrr-playback built for format {})",
                path.display(),
                header.version,
                header.version
            );
        };
        Ok(Events {
            reader: RecordReader::new(
                file,
                FILE_HEADER_LEN as u64,
                len - FILE_HEADER_LEN as u64,
                DEFAULT_CHUNK,
            ),
            table,
            end: StreamEnd::default(),
            finished: false,
        })
    }

    /// The id → name table in use.
    pub fn table(&self) -> ApiTable {
        self.table
    }

    /// How the stream ended (complete once iteration returned `None`).
    pub fn end(&self) -> StreamEnd {
        self.end
    }

    /// The next event whose `sequence_id` is at least `from` and whose raw
    /// id passes `api` (when given), decoding only those. `None` at the end.
    pub fn next_matching(
        &mut self,
        from: u64,
        api: Option<u16>,
    ) -> anyhow::Result<Option<DecodedEvent>> {
        if self.finished {
            return Ok(None);
        }
        loop {
            let Some(rec) = self.reader.next_record()? else {
                self.finished = true;
                if self.end.trailer.is_some() {
                    self.end.bytes_after_trailer = self.reader.torn();
                } else {
                    self.end.torn = self.reader.torn();
                }
                return Ok(None);
            };
            if self.end.trailer.is_some() {
                self.end.after_trailer += 1;
                continue;
            }
            if let Some(n) = rec.trailer_count() {
                self.end.trailer = Some(n);
                continue;
            }
            self.end.events += 1;
            let h = rec.header;
            if h.sequence_id < from || api.is_some_and(|a| a != h.event_type) {
                continue;
            }
            let v7 = self.table.canonical(h.event_type);
            return Ok(Some(DecodedEvent {
                seq: h.sequence_id,
                thread: h.thread_id,
                timestamp_ns: h.timestamp_ns,
                id: h.event_type,
                api: self.table.display_name(h.event_type).into_owned(),
                offset: rec.offset,
                length: h.payload_length,
                fields: fields(decode(v7, rec.bytes)),
            }));
        }
    }
}

fn hex(v: u64) -> Value {
    Value::String(format!("{v:#x}"))
}

fn hash(h: BlobHash) -> Value {
    h.nonzero()
        .map_or(Value::Null, |h| Value::String(h.to_string()))
}

fn bytes_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn args(args: Args<'_>) -> Value {
    Value::Array(
        args.map(|a| {
            let mut m = Map::new();
            m.insert("kind".into(), json!(a.kind.label()));
            if let ArgKind::Other(k) = a.kind {
                m.insert("value_kind".into(), json!(k));
            }
            m.insert("size".into(), json!(a.bytes.len()));
            if a.kind == ArgKind::Pointer && a.bytes.len() == 8 {
                m.insert(
                    "value".into(),
                    hex(u64::from_le_bytes(a.bytes.try_into().expect("8"))),
                );
            } else {
                m.insert("bytes".into(), json!(bytes_hex(a.bytes)));
            }
            if a.kind == ArgKind::Embedded {
                m.insert(
                    "pointer_offsets".into(),
                    json!(a.offsets().collect::<Vec<_>>()),
                );
            }
            Value::Object(m)
        })
        .collect(),
    )
}

fn fields(p: Payload<'_>) -> Map<String, Value> {
    let v = match p {
        Payload::Launch(l) => json!({
            "kernel": String::from_utf8_lossy(l.name),
            "code_object": hash(l.code_object),
            "stream": hex(l.stream),
            "grid": l.grid,
            "block": l.block,
            "shared_mem": l.shared_mem,
            "args": args(l.args()),
            "attributes": {"count": l.attr_count, "stride": l.attr_stride},
            "snapshots": l.snapshots().map(|s| json!({
                "ptr": hex(s.ptr), "offset": s.offset, "length": s.length,
                "blob": hash(s.blob), "direction": s.direction,
            })).collect::<Vec<_>>(),
        }),
        Payload::KernelNode(n) => json!({
            "kernel": String::from_utf8_lossy(n.name),
            "code_object": hash(n.code_object),
            "args": args(n.args()),
        }),
        Payload::Alloc {
            ptr,
            size,
            flags,
            stream,
        } => {
            let mut v = json!({"ptr": hex(ptr), "size": size});
            if let Some(f) = flags {
                v["flags"] = json!(f);
            }
            if let Some(s) = stream {
                v["stream"] = hex(s);
            }
            v
        }
        Payload::Free { ptr, stream } => {
            let mut v = json!({"ptr": hex(ptr)});
            if let Some(s) = stream {
                v["stream"] = hex(s);
            }
            v
        }
        Payload::Copy(c) => {
            let mut v = json!({"dst": hex(c.dst), "src": hex(c.src), "size": c.size});
            if let Some(k) = c.kind {
                v["kind"] = json!(memcpy_kind_name(k));
            }
            if let Some(s) = c.stream {
                v["stream"] = hex(s);
            }
            v["blob"] = hash(c.blob);
            if !c.d2h_blob.is_zero() {
                v["d2h_blob"] = hash(c.d2h_blob);
            }
            v["d2h_check"] = json!(c.d2h_check);
            v
        }
        Payload::HostRegister {
            ptr,
            size,
            flags,
            blob,
        } => {
            json!({"ptr": hex(ptr), "size": size, "flags": flags, "blob": hash(blob)})
        }
        Payload::ModuleLoad {
            module,
            code_object,
        } => {
            json!({"module": hex(module), "code_object": hash(code_object)})
        }
        Payload::FatBinary { blob, size } => json!({"blob": hash(blob), "size": size}),
        Payload::GetFunction { function, module } => {
            json!({"function": hex(function), "module": hex(module)})
        }
        Payload::Handle { field, value } => json!({ field: hex(value) }),
        Payload::SetDevice { device } => json!({"device": device}),
        Payload::Short { expected } => json!({
            "undecoded": format!("record shorter than the documented {expected}-byte layout")
        }),
        Payload::Malformed(e) => json!({"malformed": e.to_string()}),
        Payload::Opaque => json!({}),
    };
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}
