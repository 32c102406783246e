//! `hrr bundle <archive>`: one pass over the files. Each is read once, in
//! large chunks that a hashing thread digests while zstd's worker threads
//! compress them; `hrr archive info` summarises the archive meanwhile.
//! `BUNDLE.json`, which lists every file's size and SHA-256 and holds that
//! summary, is the last entry (layout 2). Memory stays bounded: nothing is
//! read whole.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context as _};

use crate::cli::PackArgs;
use crate::collect::{archive_items, input_item, Item, Source};
use crate::digest::BUF_SIZE;
use crate::hash_thread::HashThread;
use crate::hrr::Hrr;
use crate::manifest::{
    ArchiveSource, BundleManifest, FileRecord, Generator, Role, Skipped, Totals, MANIFEST_NAME,
    SCHEMA_VERSION,
};
use crate::output::{default_name, protected_dir, resolve_archive, Target};
use crate::term::Ui;
use crate::writeback::Writeback;

/// zstd level: fast enough to keep up with a disk, and archives of GPU
/// buffers compress well already at this level (`zstd`'s default, as in
/// `tar -I 'zstd -T0'`).
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
    let manifest = std::thread::scope(|scope| {
        // hrr reads events.bin too: it runs beside the packing, and only
        // BUNDLE.json, written last, needs what it says.
        let info = scope.spawn(|| hrr.archive_info(&archive, &ui));
        let archive_info = || {
            info.join()
                .unwrap_or_else(|_| Err(anyhow!("the hrr archive info thread failed")))
        };
        write_bundle(sink.file(), header, &items, &ui, archive_info)
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
/// `verify` also catches a damaged stream). Returns the manifest written.
fn write_bundle(
    out: &File,
    header: ManifestHeader,
    items: &[Item],
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
    let mut tar = tar::Builder::new(encoder);
    let created = mtime_of(header.created);

    let expected: u64 = items.iter().map(Item::size_now).sum();
    let bar = ui.progress(expected, "packing");
    let hasher = HashThread::start()?;
    let mut files = Vec::with_capacity(items.len());
    for item in items {
        let (size, sha256) = match &item.source {
            Source::File(path) => copy_file(&mut tar, &hasher, &item.path, path, &bar)?,
            Source::Bytes(bytes) => {
                entry_header(&mut tar, &item.path, bytes.len() as u64, created)?;
                let copied = hasher.copy(&bytes[..], tar.get_mut(), |n| bar.inc(n))?;
                pad(&mut tar, copied.0)?;
                copied
            }
        };
        files.push(FileRecord {
            path: item.path.clone(),
            size,
            sha256,
            role: item.role,
        });
    }
    bar.finish_and_clear();

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

/// Streams one archive file into the tar as `name`, hashing it on the way;
/// returns its size and SHA-256. A file that is shorter than when it was
/// opened (something writes to the archive) is an error.
fn copy_file<W: Write>(
    tar: &mut tar::Builder<W>,
    hasher: &HashThread,
    name: &str,
    path: &Path,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<(u64, String)> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let meta = file
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?;
    let size = meta.len();
    let mtime = meta.modified().map(mtime_of).unwrap_or(0);
    entry_header(tar, name, size, mtime)?;
    let (read, sha256) = hasher
        .copy(file.take(size), tar.get_mut(), |n| bar.inc(n))
        .with_context(|| format!("cannot read {}", path.display()))?;
    pad(tar, read)?;
    if read != size {
        bail!(
            "{} changed while it was being bundled; bundle an archive nothing is writing to",
            path.display()
        );
    }
    Ok((read, sha256))
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

fn mtime_of(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
