//! SHA-256 as bundles use it: of a whole file (layouts 1 and 2), of each
//! piece and over the piece digests (layout 3), and the hex form every
//! digest is written in.

use std::io::{self, Read};

use sha2::{Digest, Sha256};

use crate::manifest::PIECE_SIZE;

/// Copy/hash buffer size: large enough for throughput, small enough that
/// memory stays bounded whatever the archive size.
pub const BUF_SIZE: usize = 256 * 1024;

/// One SHA-256 digest.
pub type Sha256Digest = [u8; 32];

/// A stream's digests in both forms, as `verify` computes them: the layout
/// that says which one counts is in `BUNDLE.json`, which comes last.
#[derive(Debug, PartialEq, Eq)]
pub struct StreamDigests {
    /// Bytes read.
    pub size: u64,
    /// SHA-256 of them all.
    pub whole: Sha256Digest,
    /// SHA-256 of each [`PIECE_SIZE`]-byte piece (one for an empty stream).
    pub pieces: Vec<Sha256Digest>,
}

/// Reads `reader` to the end in [`BUF_SIZE`] chunks, hashing it whole and
/// in pieces; nothing is held but the digests.
pub fn hash_stream(mut reader: impl Read) -> io::Result<StreamDigests> {
    let mut whole = Sha256::new();
    let mut piece = Sha256::new();
    let mut in_piece = 0u64;
    let mut pieces = Vec::new();
    let mut size = 0;
    let mut buf = vec![0u8; BUF_SIZE];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        whole.update(&buf[..n]);
        size += n as u64;
        let mut rest = &buf[..n];
        while !rest.is_empty() {
            if in_piece == PIECE_SIZE {
                pieces.push(std::mem::take(&mut piece).finalize().into());
                in_piece = 0;
            }
            let take = rest
                .len()
                .min(usize::try_from(PIECE_SIZE - in_piece).unwrap_or(usize::MAX));
            piece.update(&rest[..take]);
            in_piece += take as u64;
            rest = &rest[take..];
        }
    }
    pieces.push(piece.finalize().into());
    Ok(StreamDigests {
        size,
        whole: whole.finalize().into(),
        pieces,
    })
}

/// The digest over a file's piece digests (layout 3's `tree_sha256`): the
/// SHA-256 of the 32-byte digests concatenated in order.
pub fn tree(pieces: &[Sha256Digest]) -> Sha256Digest {
    let mut hasher = Sha256::new();
    for p in pieces {
        hasher.update(p);
    }
    hasher.finalize().into()
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // FIPS 180-2 test vectors.
    const ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    const EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn a_short_stream_is_one_piece_whose_digest_is_the_whole_one() {
        let d = hash_stream(&b"abc"[..]).unwrap();
        assert_eq!((d.size, hex(&d.whole)), (3, ABC.to_string()));
        assert_eq!(d.pieces, vec![d.whole]);
        let d = hash_stream(&b""[..]).unwrap();
        assert_eq!((d.size, hex(&d.whole)), (0, EMPTY.to_string()));
        assert_eq!(d.pieces, vec![d.whole]);
    }

    #[test]
    fn a_long_stream_is_cut_at_every_piece_size() {
        let piece = PIECE_SIZE as usize;
        let data: Vec<u8> = (0..2 * piece + 5).map(|i| (i % 251) as u8).collect();
        let d = hash_stream(&data[..]).unwrap();
        let expect: Vec<Sha256Digest> = data
            .chunks(piece)
            .map(|c| Sha256::digest(c).into())
            .collect();
        assert_eq!(d.pieces, expect);
        assert_eq!(d.whole, <Sha256Digest>::from(Sha256::digest(&data)));
        // Exactly two pieces' worth is two pieces, not a third empty one.
        let d = hash_stream(&data[..2 * piece]).unwrap();
        assert_eq!(d.pieces, expect[..2]);
    }
}
