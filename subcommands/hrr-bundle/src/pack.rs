//! `hrr bundle <archive>`: hash every file (pass 1), then stream
//! `BUNDLE.json` and the files into a `.tar.zst` (pass 2), re-hashing while
//! copying so a file that changed in between is caught. Memory stays
//! bounded: nothing is read whole.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context as _};

use crate::cli::PackArgs;
use crate::collect::{archive_items, input_item, Item, Source};
use crate::digest::{hash_stream, HashingReader, BUF_SIZE};
use crate::hrr::Hrr;
use crate::manifest::{
    ArchiveSource, BundleManifest, FileRecord, Generator, Role, Totals, MANIFEST_NAME,
    SCHEMA_VERSION,
};
use crate::output::{default_name, protected_dir, resolve_archive, Target};
use crate::term::Ui;

/// zstd level: fast enough to keep up with a disk, and archives of GPU
/// buffers compress well already at this level.
const ZSTD_LEVEL: i32 = 3;

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
    let archive_info = hrr.archive_info(&archive, &ui)?;
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

    let files = hash_all(&items, &ui)?;
    let manifest = BundleManifest {
        schema_version: SCHEMA_VERSION,
        generator: Generator {
            name: env!("CARGO_PKG_NAME").to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        },
        created_utc: humantime::format_rfc3339_seconds(now).to_string(),
        archive: ArchiveSource {
            source_path: archive.display().to_string(),
            bundle_path: bundle_dir,
            kind: archive_info
                .get("kind")
                .and_then(|k| k.as_str())
                .map(str::to_owned),
        },
        totals: Totals::of(&files),
        files,
        skipped,
        archive_info,
    };

    let sink = target.sink()?;
    write_bundle(sink.file(), &manifest, &items, mtime_of(now), &ui)
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

/// Pass 1: size and SHA-256 of every item, streamed.
fn hash_all(items: &[Item], ui: &Ui) -> anyhow::Result<Vec<FileRecord>> {
    let expected: u64 = items
        .iter()
        .map(|item| match &item.source {
            Source::File(p) => std::fs::metadata(p).map(|m| m.len()).unwrap_or(0),
            Source::Bytes(b) => b.len() as u64,
        })
        .sum();
    let bar = ui.progress(expected, "hashing");
    let mut records = Vec::with_capacity(items.len());
    for item in items {
        let (size, sha256) = match &item.source {
            Source::File(path) => {
                let file =
                    File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
                hash_stream(file, |n| bar.inc(n))
                    .with_context(|| format!("cannot read {}", path.display()))?
            }
            Source::Bytes(bytes) => hash_stream(&bytes[..], |n| bar.inc(n))?,
        };
        records.push(FileRecord {
            path: item.path.clone(),
            size,
            sha256,
            role: item.role,
        });
    }
    bar.finish_and_clear();
    Ok(records)
}

/// Pass 2: `BUNDLE.json` first, then every item, into `out` as tar + zstd
/// (with the zstd frame checksum, so `verify` also catches a damaged
/// stream).
fn write_bundle(
    out: &File,
    manifest: &BundleManifest,
    items: &[Item],
    created: u64,
    ui: &Ui,
) -> anyhow::Result<()> {
    let mut encoder = zstd::Encoder::new(BufWriter::with_capacity(BUF_SIZE, out), ZSTD_LEVEL)?;
    encoder.include_checksum(true)?;
    let mut tar = tar::Builder::new(encoder);

    let json = serde_json::to_vec_pretty(manifest)?;
    append(
        &mut tar,
        MANIFEST_NAME,
        json.len() as u64,
        created,
        &json[..],
    )?;

    let bar = ui.progress(manifest.totals.bytes, "packing");
    for (item, record) in items.iter().zip(&manifest.files) {
        match &item.source {
            Source::File(path) => copy_file(&mut tar, path, record, &bar)?,
            Source::Bytes(bytes) => {
                append(&mut tar, &record.path, record.size, created, &bytes[..])?;
                bar.inc(record.size);
            }
        }
    }
    bar.finish_and_clear();

    let encoder = tar.into_inner()?;
    let mut writer = encoder.finish()?;
    writer.flush()?;
    writer.into_inner().map_err(|e| e.into_error())?;
    Ok(())
}

/// Streams one archive file into the tar, checking it still has the size
/// and hash pass 1 recorded.
fn copy_file<W: Write>(
    tar: &mut tar::Builder<W>,
    path: &Path,
    record: &FileRecord,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<()> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mtime = file
        .metadata()
        .and_then(|m| m.modified())
        .map(mtime_of)
        .unwrap_or(0);
    let mut reader = HashingReader::new(file.take(record.size), |n| bar.inc(n));
    append(tar, &record.path, record.size, mtime, &mut reader)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let (size, sha256) = reader.finish();
    if size != record.size || sha256 != record.sha256 {
        bail!(
            "{} changed while it was being bundled; bundle an archive nothing is writing to",
            path.display()
        );
    }
    Ok(())
}

/// Appends one regular file entry (mode 0644, owner 0:0, GNU long names).
fn append<W: Write>(
    tar: &mut tar::Builder<W>,
    path: &str,
    size: u64,
    mtime: u64,
    data: impl Read,
) -> std::io::Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(size);
    header.set_mode(0o644);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(mtime);
    tar.append_data(&mut header, path, data)
}

fn mtime_of(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
