//! SHA-256 of a stream (what `verify` checks entries with), never held
//! whole in memory, and the hex form every digest is written in.

use std::io::{self, Read};

use sha2::{Digest, Sha256};

/// Copy/hash buffer size: large enough for throughput, small enough that
/// memory stays bounded whatever the archive size.
pub const BUF_SIZE: usize = 256 * 1024;

/// Reads `reader` to the end, returning its size and SHA-256 (hex).
pub fn hash_stream(mut reader: impl Read) -> io::Result<(u64, String)> {
    let mut hasher = Sha256::new();
    let mut bytes = 0;
    let mut buf = vec![0u8; BUF_SIZE];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buf[..n]);
                bytes += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok((bytes, hex(&hasher.finalize())))
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
    use super::hash_stream;

    #[test]
    fn sha256_of_known_inputs() {
        // FIPS 180-2 test vectors.
        let (n, h) = hash_stream(&b"abc"[..]).unwrap();
        assert_eq!(n, 3);
        assert_eq!(
            h,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let (n, h) = hash_stream(&b""[..]).unwrap();
        assert_eq!(n, 0);
        assert_eq!(
            h,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
