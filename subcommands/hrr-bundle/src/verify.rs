//! `hrr bundle verify <file>`: re-read a bundle in one streaming pass and
//! check it against its `BUNDLE.json`: every listed file present with the
//! listed size and SHA-256 digests, nothing unlisted, the zstd stream
//! intact. Entries are hashed as they stream by, whole and in pieces (the
//! manifest, last in layouts 3 and 2, says which counts), and compared once
//! the manifest has been read, wherever its layout puts it.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, BufReader, Read};
use std::path::Path;

use anyhow::Context as _;

use crate::digest::{hash_stream, hex, tree, StreamDigests, BUF_SIZE};
use crate::manifest::{
    is_safe_path, BundleManifest, FileDigest, FileRecord, Totals, MANIFEST_MAX_BYTES,
    MANIFEST_NAME, PIECE_SIZE, SCHEMA_VERSION,
};
use crate::term::inert;
use crate::user_input;

/// One thing wrong with a bundle: the file it concerns and what.
struct Problem {
    path: String,
    what: String,
}

/// Checks `bundle`; prints `ok: N files, M bytes` (exit 0) or one line per
/// problem on stdout and an `error:` summary on stderr (exit 1).
pub fn run(bundle: &Path) -> anyhow::Result<i32> {
    let file = user_input::open(bundle).with_context(|| format!("bundle {}", bundle.display()))?;
    let name = bundle.display().to_string();
    let (totals, problems) = check(file, &name);
    if problems.is_empty() {
        println!("ok: {} files, {} bytes", totals.files, totals.bytes);
        return Ok(0);
    }
    for p in &problems {
        println!("{}: {}", inert(&p.path), inert(&p.what));
    }
    eprintln!(
        "error: {}: {} problem{} found",
        inert(&name),
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    );
    Ok(1)
}

/// One entry of the bundle other than its manifest, as read.
struct Content {
    path: String,
    kind: tar::EntryType,
    /// Those of a regular file's content.
    digests: Option<StreamDigests>,
}

/// The listed totals and every problem found in the bundle read from `file`.
fn check(file: user_input::UserFile, name: &str) -> (Totals, Vec<Problem>) {
    let mut problems = Vec::new();
    let damaged = |e: io::Error| Problem {
        path: name.to_string(),
        what: format!("damaged or not an hrr bundle: {e}"),
    };
    let decoder = match zstd::Decoder::with_buffer(BufReader::with_capacity(BUF_SIZE, file)) {
        Ok(d) => d,
        Err(e) => return (Totals::default(), vec![damaged(e)]),
    };
    let mut archive = tar::Archive::new(decoder);
    let entries = match archive.entries() {
        Ok(entries) => entries,
        Err(e) => return (Totals::default(), vec![damaged(e)]),
    };

    // The manifest (its position among the entries), and the rest.
    let mut manifest = None;
    let mut contents = Vec::new();
    let mut count = 0;
    for entry in entries {
        let read = entry.and_then(|entry| {
            if manifest.is_none() && entry_path(&entry) == MANIFEST_NAME {
                manifest = Some((count, read_manifest(entry)));
                Ok(())
            } else {
                read_content(entry).map(|c| contents.push(c))
            }
        });
        if let Err(e) = read {
            problems.push(damaged(e));
            break;
        }
        count += 1;
    }
    // Read to the end of the zstd frame so its checksum is checked too.
    if let Err(e) = io::copy(&mut archive.into_inner(), &mut io::sink()) {
        problems.push(damaged(e));
    }
    let manifest = match manifest {
        None if count == 0 && problems.is_empty() => {
            Err(format!("the bundle is empty: no {MANIFEST_NAME}"))
        }
        None => Err(format!("no {MANIFEST_NAME} entry: not an hrr bundle")),
        Some((at, manifest)) => manifest.inspect(|m| problems.extend(misplaced(m, at, count))),
    };
    let manifest = match manifest {
        Ok(m) => m,
        Err(what) => {
            problems.push(Problem {
                path: MANIFEST_NAME.to_string(),
                what,
            });
            return (Totals::default(), problems);
        }
    };

    if manifest.schema_version >= 3 && manifest.piece_size != Some(PIECE_SIZE) {
        problems.push(Problem {
            path: MANIFEST_NAME.to_string(),
            what: match manifest.piece_size {
                Some(size) => format!(
                    "piece_size {size} is not the {PIECE_SIZE} of layout {}",
                    manifest.schema_version
                ),
                None => format!(
                    "no piece_size, which layout {} requires",
                    manifest.schema_version
                ),
            },
        });
        return (Totals::default(), problems);
    }
    let listed = index(&manifest.files, &mut problems);
    let totals = Totals::of(&manifest.files);
    if manifest.totals != totals {
        problems.push(Problem {
            path: MANIFEST_NAME.to_string(),
            what: format!(
                "totals say {} files, {} bytes but the list has {} files, {} bytes",
                manifest.totals.files, manifest.totals.bytes, totals.files, totals.bytes
            ),
        });
    }
    let mut seen = BTreeSet::new();
    for content in contents {
        check_content(
            content,
            &listed,
            manifest.schema_version,
            &mut seen,
            &mut problems,
        );
    }
    for path in listed.keys().filter(|p| !seen.contains(*p)) {
        problems.push(Problem {
            path: path.clone(),
            what: format!("listed in {MANIFEST_NAME} but missing from the bundle"),
        });
    }
    (totals, problems)
}

/// A problem when the manifest, found as entry `at` of `count`, is not
/// where its layout puts it: last in layout 2, first in layout 1.
fn misplaced(manifest: &BundleManifest, at: usize, count: usize) -> Option<Problem> {
    let (want, place) = match manifest.schema_version {
        1 => (0, "first"),
        _ => (count.saturating_sub(1), "last"),
    };
    (at != want).then(|| Problem {
        path: MANIFEST_NAME.to_string(),
        what: format!(
            "entry {} of {count}, but layout {} puts it {place}: not as hrr-bundle writes it",
            at + 1,
            manifest.schema_version
        ),
    })
}

/// Parses the `BUNDLE.json` entry.
fn read_manifest<R: Read>(mut entry: tar::Entry<'_, R>) -> Result<BundleManifest, String> {
    if entry.header().size().unwrap_or(u64::MAX) > MANIFEST_MAX_BYTES {
        return Err(format!("larger than {MANIFEST_MAX_BYTES} bytes"));
    }
    let mut text = Vec::new();
    (&mut entry)
        .take(MANIFEST_MAX_BYTES)
        .read_to_end(&mut text)
        .map_err(|e| format!("unreadable: {e}"))?;
    let doc: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| format!("not a valid manifest: {e}"))?;
    // The layout version first: a later layout may change any other field,
    // and its bundle must be named as such, not as damaged.
    match doc.get("schema_version") {
        Some(v) if v.as_u64().is_some_and(|v| (1..=u64::from(SCHEMA_VERSION)).contains(&v)) => {}
        Some(v) => {
            return Err(format!(
                "schema_version {v} is not one this hrr-bundle reads (it reads 1 to {SCHEMA_VERSION}); verify the bundle with the hrr-bundle that wrote it, or a newer one"
            ))
        }
        None => return Err("has no schema_version: not an hrr bundle manifest".into()),
    }
    serde_json::from_value(doc).map_err(|e| format!("not a valid manifest: {e}"))
}

/// Reads one entry that is not the manifest, hashing a regular file's
/// content. An `Err` means the stream itself could not be read.
fn read_content<R: Read>(entry: tar::Entry<'_, R>) -> io::Result<Content> {
    let path = entry_path(&entry);
    let kind = entry.header().entry_type();
    let digests = if kind == tar::EntryType::Regular {
        Some(hash_stream(entry)?)
    } else {
        None
    };
    Ok(Content {
        path,
        kind,
        digests,
    })
}

/// Listed files by path; duplicate and unsafe paths are problems.
fn index<'a>(
    files: &'a [FileRecord],
    problems: &mut Vec<Problem>,
) -> BTreeMap<String, &'a FileRecord> {
    let mut listed = BTreeMap::new();
    for record in files {
        if !is_safe_path(&record.path) || record.path == MANIFEST_NAME {
            problems.push(Problem {
                path: record.path.clone(),
                what: format!("not a safe relative path for a file in {MANIFEST_NAME}"),
            });
        } else if listed.insert(record.path.clone(), record).is_some() {
            problems.push(Problem {
                path: record.path.clone(),
                what: format!("listed twice in {MANIFEST_NAME}"),
            });
        }
    }
    listed
}

/// Checks one entry against the list, by the digests of `layout`.
fn check_content(
    content: Content,
    listed: &BTreeMap<String, &FileRecord>,
    layout: u32,
    seen: &mut BTreeSet<String>,
    problems: &mut Vec<Problem>,
) {
    let mut problem = |what: String| {
        problems.push(Problem {
            path: content.path.clone(),
            what,
        })
    };
    let Some(digests) = content
        .digests
        .filter(|_| content.kind == tar::EntryType::Regular)
    else {
        problem(format!(
            "unexpected {:?} entry, not listed in {MANIFEST_NAME}",
            content.kind
        ));
        return;
    };
    let Some(record) = listed.get(&content.path) else {
        problem(format!("not listed in {MANIFEST_NAME}"));
        return;
    };
    if !seen.insert(content.path.clone()) {
        problem("present twice in the bundle".to_string());
        return;
    }
    if digests.size != record.size {
        problem(format!(
            "size {} bytes, {MANIFEST_NAME} says {}",
            digests.size, record.size
        ));
        return;
    }
    let mismatch = match (&record.digest, layout >= 3) {
        (FileDigest::Whole { sha256 }, false) => {
            let got = hex(&digests.whole);
            (got != *sha256)
                .then(|| format!("SHA-256 mismatch: content {got}, {MANIFEST_NAME} says {sha256}"))
        }
        (
            FileDigest::Pieces {
                tree_sha256,
                piece_sha256,
            },
            true,
        ) => pieces_mismatch(&digests, tree_sha256, piece_sha256),
        _ => Some(format!(
            "its digests in {MANIFEST_NAME} are not those of layout {layout}"
        )),
    };
    if let Some(what) = mismatch {
        problem(what);
    }
}

/// What is wrong, if anything, between a file's piece digests and those
/// listed for it: the first piece that differs (and how many more), or a
/// `tree_sha256` that is not the digest of its pieces.
fn pieces_mismatch(
    digests: &StreamDigests,
    tree_sha256: &str,
    listed: &[String],
) -> Option<String> {
    let count = digests.pieces.len();
    if listed.len() != count {
        return Some(format!(
            "{MANIFEST_NAME} lists {} piece digests, but {} bytes are {count} pieces of {PIECE_SIZE} bytes",
            listed.len(),
            digests.size
        ));
    }
    let got: Vec<String> = digests.pieces.iter().map(|d| hex(d)).collect();
    let bad: Vec<usize> = (0..count).filter(|&i| got[i] != listed[i]).collect();
    if let Some(&first) = bad.first() {
        let offset = first as u64 * PIECE_SIZE;
        let len = (digests.size - offset).min(PIECE_SIZE);
        let more = match bad.len() - 1 {
            0 => String::new(),
            1 => " (and 1 more piece)".to_string(),
            n => format!(" (and {n} more pieces)"),
        };
        return Some(format!(
            "SHA-256 mismatch in piece {} of {count} ({len} bytes from byte {offset}): content {}, {MANIFEST_NAME} says {}{more}",
            first + 1,
            got[first],
            listed[first]
        ));
    }
    let got = hex(&tree(&digests.pieces));
    (got != tree_sha256).then(|| {
        format!("tree_sha256 mismatch: its pieces give {got}, {MANIFEST_NAME} says {tree_sha256}")
    })
}

fn entry_path<R: Read>(entry: &tar::Entry<'_, R>) -> String {
    String::from_utf8_lossy(&entry.path_bytes()).into_owned()
}
