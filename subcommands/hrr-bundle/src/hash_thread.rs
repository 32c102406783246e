//! SHA-256 on a thread of its own, fed the chunks a file is packed from, so
//! hashing runs beside reading and compression instead of after them.

use std::io::{self, Read};
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

    /// A reader of `inner` whose bytes are also hashed here, read in large
    /// chunks; `on_read(n)` is called for each chunk.
    pub fn tee<'a, R: Read, F: FnMut(u64)>(&'a self, inner: R, on_read: F) -> Tee<'a, R, F> {
        Tee {
            hasher: self,
            inner,
            chunk: Arc::from(Vec::new()),
            pos: 0,
            bytes: 0,
            on_read,
        }
    }
}

impl Drop for HashThread {
    fn drop(&mut self) {
        self.to = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The reader [`HashThread::tee`] makes.
pub struct Tee<'a, R, F> {
    hasher: &'a HashThread,
    inner: R,
    chunk: Arc<[u8]>,
    pos: usize,
    bytes: u64,
    on_read: F,
}

impl<R: Read, F: FnMut(u64)> Tee<'_, R, F> {
    /// Bytes read and their SHA-256 (lowercase hex).
    pub fn finish(self) -> io::Result<(u64, String)> {
        self.hasher.send(Message::End)?;
        let digest = self
            .hasher
            .digests
            .recv()
            .map_err(|_| io::Error::other("the hashing thread stopped"))?;
        Ok((self.bytes, digest))
    }

    /// The next chunk of `inner`, as full as it gets; empty at its end.
    fn refill(&mut self) -> io::Result<()> {
        let mut buf = vec![0u8; CHUNK];
        let mut filled = 0;
        while filled < CHUNK {
            match self.inner.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        buf.truncate(filled);
        self.chunk = Arc::from(buf);
        self.pos = 0;
        if filled > 0 {
            self.bytes += filled as u64;
            (self.on_read)(filled as u64);
            self.hasher.send(Message::Bytes(Arc::clone(&self.chunk)))?;
        }
        Ok(())
    }
}

impl<R: Read, F: FnMut(u64)> Read for Tee<'_, R, F> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.chunk.len() {
            self.refill()?;
        }
        let n = out.len().min(self.chunk.len() - self.pos);
        out[..n].copy_from_slice(&self.chunk[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
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
            let mut tee = hasher.tee(data, |n| seen += n);
            let mut copy = Vec::new();
            // Small reads, as tar's copy makes them.
            let mut buf = [0u8; 8192];
            loop {
                let n = tee.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                copy.extend_from_slice(&buf[..n]);
            }
            let (size, sha) = tee.finish().unwrap();
            assert_eq!(copy, data);
            assert_eq!(seen, data.len() as u64);
            assert_eq!((size, sha), hash_stream(data, |_| {}).unwrap());
        }
    }
}
