//! `hrr bundle <archive>`: one pass over the files. Each is read once, in
//! pieces that reader threads hash as they read them (see [`Pieces`])
//! while zstd's worker threads compress the same buffers; `hrr archive
//! info` summarises the archive meanwhile. `BUNDLE.json`, which lists every
//! file's size and piece digests and holds that summary, is the last entry
//! (layout 3). Memory stays bounded: nothing is read whole.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context as _};
use zstd::stream::raw::CParameter;

use crate::cli::PackArgs;
use crate::collect::{archive_items, input_item, Item, Source};
use crate::digest::{hex, tree, BUF_SIZE};
use crate::hrr::Hrr;
use crate::manifest::{
    piece_count, ArchiveSource, BundleManifest, FileDigest, FileRecord, Generator, Role, Skipped,
    Totals, MANIFEST_NAME, PIECE_SIZE, SCHEMA_VERSION,
};
use crate::output::{default_name, protected_dir, resolve_archive, Target};
use crate::pieces::Pieces;
use crate::term::Ui;
use crate::writeback::Writeback;

/// zstd level: fast enough to keep up with a disk, and archives of GPU
/// buffers compress well already at this level (`zstd`'s default, as in
/// `tar -I 'zstd -T0'`).
const ZSTD_LEVEL: i32 = 3;

/// Input bytes per zstd worker job. Level 3 would take 8 MiB; half that
/// keeps a job and its match tables closer to the worker's cache (about a
/// tenth less CPU) and costs about 0.1% of output size.
const ZSTD_JOB_SIZE: u32 = 4 << 20;

/// Packs the archive per `args`; prints the bundle path on stdout.
pub fn run(args: &PackArgs) -> anyhow::Result<i32> {
    let ui = Ui::new(args.quiet);
    let arg = args
        .archive
        .as_deref()
        .ok_or_else(|| anyhow!("an archive directory is required"))?;
    let archive = resolve_archive(arg)?;
    let now = SystemTime::now();
    let requested = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(default_name(&archive, now)));
    let target = Target::plan(&requested, &protected_dir(&archive), args.force)?;
    let mut inputs = Vec::new();
    if let Some(finding) = &args.finding {
        inputs.push(input_item(finding, Role::Finding, "finding")?);
    }
    if let Some(log) = &args.log {
        inputs.push(input_item(log, Role::Log, "log")?);
    }

    let hrr = Hrr::from_env();
    if args.triage {
        inputs.push(Item {
            path: "finding/finding.json".to_string(),
            role: Role::Finding,
            source: Source::Bytes(hrr.triage_finding(&archive)?),
        });
    }

    let name = archive
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("archive");
    let bundle_dir = format!("archive/{name}");
    let (mut items, skipped) = archive_items(&archive, &bundle_dir, &ui)?;
    items.extend(inputs);

    let header = ManifestHeader {
        created: now,
        source_path: archive.display().to_string(),
        bundle_path: bundle_dir,
        skipped,
    };
    let sink = target.sink()?;
    let created = mtime_of(header.created);
    let manifest = std::thread::scope(|scope| {
        // hrr reads events.bin too: it runs beside the packing, and only
        // BUNDLE.json, written last, needs what it says.
        let info = scope.spawn(|| hrr.archive_info(&archive, &ui));
        let archive_info = || {
            info.join()
                .unwrap_or_else(|_| Err(anyhow!("the hrr archive info thread failed")))
        };
        let pieces =
            Pieces::start(scope, &items, created).context("cannot start the reading threads")?;
        write_bundle(sink.file(), header, &items, pieces, &ui, archive_info)
    })
    .with_context(|| format!("cannot write bundle {}", target.path.display()))?;
    target.commit(sink)?;
    println!("{}", target.path.display());
    ui.status(&format!(
        "wrote {}: {} files, {} bytes",
        target.path.display(),
        manifest.totals.files,
        manifest.totals.bytes
    ));
    Ok(0)
}

/// What `BUNDLE.json` says besides the files and the summary, known before
/// they are packed.
struct ManifestHeader {
    created: SystemTime,
    source_path: String,
    bundle_path: String,
    skipped: Vec<Skipped>,
}

/// Writes every item, then `BUNDLE.json` listing them with the archive's
/// summary (`archive_info`, asked for once the files are in), into `out` as
/// tar + zstd (one worker thread per core, with the zstd frame checksum, so
/// `verify` also catches a damaged stream). The items' bytes come from
/// `pieces`, read and hashed on other threads. Returns the manifest written.
fn write_bundle(
    out: &File,
    header: ManifestHeader,
    items: &[Item],
    mut pieces: Pieces,
    ui: &Ui,
    archive_info: impl FnOnce() -> anyhow::Result<serde_json::Value>,
) -> anyhow::Result<BundleManifest> {
    let mut encoder = zstd::Encoder::new(
        BufWriter::with_capacity(BUF_SIZE, Writeback::new(out)),
        ZSTD_LEVEL,
    )?;
    encoder.include_checksum(true)?;
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    encoder.multithread(u32::try_from(workers).unwrap_or(1))?;
    encoder.set_parameter(CParameter::JobSize(ZSTD_JOB_SIZE))?;
    let mut tar = tar::Builder::new(encoder);

    let expected: u64 = items.iter().map(Item::size_now).sum();
    let bar = ui.progress(expected, "packing");
    let mut files = Vec::with_capacity(items.len());
    let mut digests = Vec::new();
    let mut size = 0;
    while let Some(piece) = pieces.next() {
        let piece = piece?;
        let item = &items[piece.item];
        if let Some(start) = &piece.start {
            entry_header(&mut tar, &item.path, start.size, start.mtime)?;
            size = start.size;
            digests = Vec::with_capacity(usize::try_from(piece_count(size)).unwrap_or(0));
        }
        tar.get_mut().write_all(piece.bytes())?;
        bar.inc(piece.bytes().len() as u64);
        digests.push(piece.sha256);
        let last = piece.last;
        pieces.recycle(piece);
        if last {
            pad(&mut tar, size)?;
            files.push(FileRecord {
                path: item.path.clone(),
                size,
                role: item.role,
                digest: FileDigest::Pieces {
                    tree_sha256: hex(&tree(&digests)),
                    piece_sha256: digests.iter().map(|d| hex(d)).collect(),
                },
            });
        }
    }
    bar.finish_and_clear();
    if files.len() != items.len() {
        bail!("the reading threads stopped before the last file");
    }
    let created = mtime_of(header.created);

    let archive_info = archive_info()?;
    let manifest = BundleManifest {
        schema_version: SCHEMA_VERSION,
        generator: Generator {
            name: env!("CARGO_PKG_NAME").to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        },
        created_utc: humantime::format_rfc3339_seconds(header.created).to_string(),
        archive: ArchiveSource {
            source_path: header.source_path,
            bundle_path: header.bundle_path,
            kind: archive_info
                .get("kind")
                .and_then(|k| k.as_str())
                .map(str::to_owned),
        },
        piece_size: Some(PIECE_SIZE),
        totals: Totals::of(&files),
        files,
        skipped: header.skipped,
        archive_info,
    };
    let json = serde_json::to_vec_pretty(&manifest)?;
    entry_header(&mut tar, MANIFEST_NAME, json.len() as u64, created)?;
    tar.get_mut().write_all(&json)?;
    pad(&mut tar, json.len() as u64)?;

    let encoder = tar.into_inner()?;
    let mut writer = encoder.finish()?;
    writer.flush()?;
    writer.into_inner().map_err(|e| e.into_error())?;
    Ok(manifest)
}

/// Writes the header of one regular file entry of `size` bytes (mode 0644,
/// owner 0:0, a GNU long-name entry before it when the path needs one); the
/// caller writes the content and then [`pad`]s it. The tar crate writes the
/// header and copies nothing (its copy moves 8 KiB at a time; the content
/// goes to the compressor in 1 MiB writes instead).
fn entry_header<W: Write>(
    tar: &mut tar::Builder<W>,
    path: &str,
    size: u64,
    mtime: u64,
) -> std::io::Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(size);
    header.set_mode(0o644);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(mtime);
    tar.append_data(&mut header, path, std::io::empty())
}

/// Zeros after `written` bytes of content, up to the next 512-byte block.
fn pad<W: Write>(tar: &mut tar::Builder<W>, written: u64) -> std::io::Result<()> {
    let rest = (512 - written % 512) % 512;
    tar.get_mut().write_all(&[0u8; 512][..rest as usize])
}

/// Seconds since the epoch of `t` (0 before it), as tar headers store times.
pub fn mtime_of(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
