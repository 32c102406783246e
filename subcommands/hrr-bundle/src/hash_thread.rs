//! SHA-256 on a thread of its own, fed the chunks a file is packed from, so
//! hashing runs beside reading and compression instead of after them.
//! Chunks are large (1 MiB) so each costs one read and one write.

use std::io::{self, Read, Write};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use sha2::{Digest, Sha256};

use crate::digest::hex;

/// Bytes read from a file per chunk handed to the hashing thread.
const CHUNK: usize = 1 << 20;
/// Chunks in flight between the reader and the hashing thread (memory
/// stays at a few MiB whatever the file size).
const IN_FLIGHT: usize = 8;

enum Message {
    Bytes(Arc<[u8]>),
    /// The end of one file: answer its digest and start the next.
    End,
}

/// The hashing thread of one bundle.
pub struct HashThread {
    to: Option<SyncSender<Message>>,
    digests: Receiver<String>,
    thread: Option<JoinHandle<()>>,
}

impl HashThread {
    /// Starts the thread.
    pub fn start() -> io::Result<HashThread> {
        let (to, from) = mpsc::sync_channel::<Message>(IN_FLIGHT);
        let (answer, digests) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("hrr-bundle-sha256".into())
            .spawn(move || {
                let mut hasher = Sha256::new();
                for message in from {
                    match message {
                        Message::Bytes(b) => hasher.update(&b),
                        Message::End => {
                            let digest = std::mem::take(&mut hasher).finalize();
                            if answer.send(hex(&digest)).is_err() {
                                return;
                            }
                        }
                    }
                }
            })?;
        Ok(HashThread {
            to: Some(to),
            digests,
            thread: Some(thread),
        })
    }

    fn send(&self, message: Message) -> io::Result<()> {
        self.to
            .as_ref()
            .and_then(|to| to.send(message).ok())
            .ok_or_else(|| io::Error::other("the hashing thread stopped"))
    }

    /// Copies `inner` to `out` in large chunks, each also hashed on this
    /// thread meanwhile; `on_read(n)` is called for each chunk. Returns the
    /// bytes copied and their SHA-256 (lowercase hex).
    pub fn copy(
        &self,
        mut inner: impl Read,
        out: &mut impl Write,
        mut on_read: impl FnMut(u64),
    ) -> io::Result<(u64, String)> {
        let mut bytes = 0;
        loop {
            let chunk = read_chunk(&mut inner)?;
            if chunk.is_empty() {
                break;
            }
            bytes += chunk.len() as u64;
            on_read(chunk.len() as u64);
            let chunk: Arc<[u8]> = Arc::from(chunk);
            self.send(Message::Bytes(Arc::clone(&chunk)))?;
            out.write_all(&chunk)?;
        }
        self.send(Message::End)?;
        let digest = self
            .digests
            .recv()
            .map_err(|_| io::Error::other("the hashing thread stopped"))?;
        Ok((bytes, digest))
    }
}

/// The next [`CHUNK`] bytes of `inner`, fewer only at its end.
fn read_chunk(inner: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; CHUNK];
    let mut filled = 0;
    while filled < CHUNK {
        match inner.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

impl Drop for HashThread {
    fn drop(&mut self) {
        self.to = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::hash_stream;

    #[test]
    fn each_file_gets_the_digest_of_its_own_bytes() {
        let hasher = HashThread::start().unwrap();
        let big: Vec<u8> = (0..3 * CHUNK + 77).map(|i| (i * 31 % 251) as u8).collect();
        for data in [&b""[..], b"abc", &big[..]] {
            let mut seen = 0;
            let mut copy = Vec::new();
            let (size, sha) = hasher.copy(data, &mut copy, |n| seen += n).unwrap();
            assert_eq!(copy, data);
            assert_eq!(seen, data.len() as u64);
            assert_eq!((size, sha), hash_stream(data).unwrap());
        }
    }
}
