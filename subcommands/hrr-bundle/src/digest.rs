//! SHA-256 while streaming: files are hashed as they are read, never held
//! whole in memory.

use std::io::{self, Read};

use sha2::{Digest, Sha256};

/// Copy/hash buffer size: large enough for throughput, small enough that
/// memory stays bounded whatever the archive size.
pub const BUF_SIZE: usize = 256 * 1024;

/// A reader that hashes and counts every byte passing through it, and
/// reports progress.
pub struct HashingReader<R, F: FnMut(u64)> {
    inner: R,
    hasher: Sha256,
    bytes: u64,
    on_read: F,
}

impl<R: Read, F: FnMut(u64)> HashingReader<R, F> {
    /// Wraps `inner`; `on_read(n)` is called after each read of `n` bytes.
    pub fn new(inner: R, on_read: F) -> Self {
        HashingReader {
            inner,
            hasher: Sha256::new(),
            bytes: 0,
            on_read,
        }
    }

    /// Bytes read so far and the lowercase hex SHA-256 of them.
    pub fn finish(self) -> (u64, String) {
        (self.bytes, hex(&self.hasher.finalize()))
    }
}

impl<R: Read, F: FnMut(u64)> Read for HashingReader<R, F> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        (self.on_read)(n as u64);
        Ok(n)
    }
}

/// Reads `reader` to the end, returning its size and SHA-256 (hex).
pub fn hash_stream<R: Read>(reader: R, on_read: impl FnMut(u64)) -> io::Result<(u64, String)> {
    let mut hashing = HashingReader::new(reader, on_read);
    let mut buf = vec![0u8; BUF_SIZE];
    loop {
        match hashing.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(hashing.finish())
}

/// Lowercase hex of `bytes`.
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
        let (n, h) = hash_stream(&b"abc"[..], |_| {}).unwrap();
        assert_eq!(n, 3);
        assert_eq!(
            h,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let (n, h) = hash_stream(&b""[..], |_| {}).unwrap();
        assert_eq!(n, 0);
        assert_eq!(
            h,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
