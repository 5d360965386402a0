//! Input: opens a trace by content, not by name. Plain JSON is memory-mapped;
//! gzip and zstd are decoded as a stream; `-` reads stdin. Owns the notion of
//! "the bytes of the JSON text" and nothing about JSON itself.

use std::fs::File;
use std::io::{self, BufRead, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};

/// How the bytes on disk are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Plain,
    Gzip,
    Zstd,
}

/// The bytes that open a gzip member.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// The bytes that open a zstd frame.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

impl Encoding {
    /// Detects the encoding from the first bytes of the file.
    pub fn sniff(head: &[u8]) -> Encoding {
        if head.starts_with(&GZIP_MAGIC) {
            Encoding::Gzip
        } else if head.starts_with(&ZSTD_MAGIC)
            || (head.len() >= 4 && head[0] & 0xf0 == 0x50 && head[1..4] == [0x2a, 0x4d, 0x18])
        {
            // A zstd frame, or a skippable frame (magic 0x184D2A5?), which
            // `pzstd` and seekable zstd write first.
            Encoding::Zstd
        } else {
            Encoding::Plain
        }
    }

    /// The magic number that opens a stream of this encoding.
    fn magic(self) -> &'static [u8] {
        match self {
            Encoding::Plain => &[],
            Encoding::Gzip => &GZIP_MAGIC,
            Encoding::Zstd => &ZSTD_MAGIC,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Encoding::Plain => "json",
            Encoding::Gzip => "gzip",
            Encoding::Zstd => "zstd",
        }
    }
}

/// An opened input: either a whole mapped file or a byte stream.
pub enum Source {
    /// A plain JSON file mapped into memory.
    Mapped { map: memmap2::Mmap, path: PathBuf },
    /// A decoded stream (gzip, zstd, stdin or an unmappable file).
    Stream { reader: Box<dyn Read + Send>, path: PathBuf, encoding: Encoding },
}

/// What the user asked to read, and how big it is on disk.
pub struct Opened {
    pub source: Source,
    /// Bytes on disk (compressed size for gz / zst); `None` for stdin.
    pub disk_len: Option<u64>,
    pub encoding: Encoding,
    /// Bytes consumed from disk so far (updated by the stream reader; the
    /// mapped-file path updates it as it parses).
    pub consumed: Arc<AtomicU64>,
}

/// Counts bytes read through it into a shared counter (for progress).
struct Counting<R> {
    inner: R,
    counter: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Display name for stdin: `-`, as on the command line.
pub const STDIN_NAME: &str = "-";

fn decoder(reader: Box<dyn Read + Send>, enc: Encoding) -> Result<Box<dyn Read + Send>> {
    Ok(match enc {
        Encoding::Plain => reader,
        Encoding::Gzip => Box::new(GzipMembers::new(io::BufReader::with_capacity(1 << 20, reader))),
        Encoding::Zstd => Box::new(zstd::stream::read::Decoder::new(reader).map_err(Error::io)?),
    })
}

/// The error for bytes after a gzip member that are neither zeros nor
/// another member: something was appended to the compressed data.
#[derive(Debug)]
pub struct TrailingData;

impl std::fmt::Display for TrailingData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "the gzip data is followed by bytes that are not another gzip member \
             (`gzip -d` ignores them as trailing garbage; Python's gzip refuses the file)",
        )
    }
}

impl std::error::Error for TrailingData {}

/// Gzip members one after another, as `gzip -d` and Python's `gzip` read
/// them: zero bytes between or after members (tape padding, preallocated
/// files) are skipped; anything else must be another member, and bytes
/// that cannot start one are [`TrailingData`].
struct GzipMembers<R: BufRead> {
    member: Option<flate2::bufread::GzDecoder<R>>,
}

impl<R: BufRead> GzipMembers<R> {
    fn new(inner: R) -> Self {
        GzipMembers { member: Some(flate2::bufread::GzDecoder::new(inner)) }
    }
}

impl<R: BufRead> Read for GzipMembers<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        while let Some(member) = self.member.as_mut() {
            let n = member.read(buf)?;
            if n > 0 {
                return Ok(n);
            }
            let Some(mut inner) = self.member.take().map(flate2::bufread::GzDecoder::into_inner) else { break };
            loop {
                let avail = inner.fill_buf()?;
                if avail.is_empty() {
                    return Ok(0);
                }
                let zeros = avail.iter().take_while(|&&b| b == 0).count();
                let more = zeros < avail.len();
                // A member starts `1f 8b`; one byte left in the buffer is
                // judged by the decoder.
                let starts_member = match (avail.get(zeros..zeros + 2), avail.get(zeros)) {
                    (Some(two), _) => two == GZIP_MAGIC,
                    (None, first) => first == Some(&GZIP_MAGIC[0]),
                };
                if more && !starts_member {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, TrailingData));
                }
                inner.consume(zeros);
                if more {
                    self.member = Some(flate2::bufread::GzDecoder::new(inner));
                    break;
                }
            }
        }
        Ok(0)
    }
}

/// The encoding a whole file of a compressed name (`.gz`, `.zst`) began and
/// was cut short in: its bytes are the first of that encoding's magic
/// number. A file this short of another name is left to the JSON reader.
fn cut_in_magic(path: &Path, all: &[u8]) -> Option<Encoding> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    let enc = if name.ends_with(".gz") {
        Encoding::Gzip
    } else if name.ends_with(".zst") {
        Encoding::Zstd
    } else {
        return None;
    };
    let magic = enc.magic();
    (!all.is_empty() && all.len() < magic.len() && magic.starts_with(all)).then_some(enc)
}

/// How a plain JSON file is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadMode {
    /// Memory-mapped: fastest, parsed in parallel chunks. A file that is
    /// truncated by another process while mapped faults the whole process
    /// (`SIGBUS`).
    #[default]
    Map,
    /// Read with `read(2)` as a stream: a file truncated meanwhile ends
    /// early and fails as a truncated trace, alone. Batches read this way,
    /// so that one file changing under them cannot stop the others.
    Read,
}

/// Opens `path` (or stdin for `-`), sniffing gzip / zstd by magic bytes;
/// plain files are mapped.
pub fn open(path: &Path) -> Result<Opened> {
    open_with(path, ReadMode::Map)
}

/// [`open`], reading a plain file as `mode` says.
pub fn open_with(path: &Path, mode: ReadMode) -> Result<Opened> {
    if path.as_os_str() == "-" {
        let mut stdin = io::stdin().lock();
        let mut head = Vec::with_capacity(4);
        (&mut stdin).take(4).read_to_end(&mut head).map_err(|e| Error::io(e).in_file(path))?;
        // Release the lock: the gzip decoder reads its header through
        // `io::stdin()` right away, which would wait on it forever.
        drop(stdin);
        let enc = Encoding::sniff(&head);
        let consumed = Arc::new(AtomicU64::new(0));
        let rest: Box<dyn Read + Send> =
            Box::new(Counting { inner: io::Cursor::new(head).chain(io::stdin()), counter: consumed.clone() });
        let reader = decoder(rest, enc).map_err(|e| e.in_file(Path::new(STDIN_NAME)))?;
        return Ok(Opened {
            source: Source::Stream { reader, path: PathBuf::from(STDIN_NAME), encoding: enc },
            disk_len: None,
            encoding: enc,
            consumed,
        });
    }
    let file = File::open(path).map_err(|e| open_error(e).in_file(path))?;
    let meta = file.metadata().map_err(|e| Error::io(e).in_file(path))?;
    if meta.is_dir() {
        return Err(Error::usage("is a directory (use `batch` for a directory of traces)").in_file(path));
    }
    let mut head = [0u8; 4];
    let n = {
        let mut f = &file;
        read_up_to(&mut f, &mut head).map_err(|e| Error::io(e).in_file(path))?
    };
    let enc = Encoding::sniff(&head[..n]);
    if meta.is_file() && meta.len() == n as u64 {
        if let Some(cut) = cut_in_magic(path, &head[..n]) {
            return Err(Error::bad_input(format!(
                "corrupt or truncated compressed stream (the file ends after {n} of the {} bytes that open a {} stream)",
                cut.magic().len(),
                cut.name()
            ))
            .in_file(path)
            .at(0));
        }
    }
    let disk_len = Some(meta.len());
    let consumed = Arc::new(AtomicU64::new(0));
    if mode == ReadMode::Map && enc == Encoding::Plain && meta.is_file() && meta.len() > 0 {
        // SAFETY: the map is read-only; a file truncated by another process
        // while we read it can fault, which is the documented risk of mmap.
        if let Ok(map) = unsafe { memmap2::Mmap::map(&file) } {
            sigbus::note_mapped(path);
            return Ok(Opened {
                source: Source::Mapped { map, path: path.to_path_buf() },
                disk_len,
                encoding: enc,
                consumed,
            });
        }
    }
    // The sniffed bytes go back in front of the rest of the same handle: a
    // pipe (`/dev/stdin`, `<(zcat …)`) cannot be opened a second time from
    // its start.
    let rest = io::Cursor::new(head[..n].to_vec()).chain(file);
    let counted = Counting { inner: rest, counter: consumed.clone() };
    let reader = decoder(Box::new(counted), enc).map_err(|e| e.in_file(path))?;
    Ok(Opened {
        source: Source::Stream { reader, path: path.to_path_buf(), encoding: enc },
        disk_len,
        encoding: enc,
        consumed,
    })
}

/// Up to `limit` leading bytes of a file, decoded (gzip and zstd undone),
/// and whether its decoder failed before `limit` bytes or the end (a gzip
/// or zstd stream that is corrupt or cut short): the bytes are then those
/// it decoded before the failure. Reads no further than `limit`, whatever
/// the file's size; an error only when the file cannot be opened.
pub fn head(path: &Path, limit: usize) -> Result<(Vec<u8>, bool)> {
    let opened = open(path)?;
    match opened.source {
        Source::Mapped { map, .. } => Ok((map[..limit.min(map.len())].to_vec(), false)),
        Source::Stream { reader, .. } => {
            let mut out = Vec::with_capacity(limit.min(1 << 20));
            let broken = reader.take(limit as u64).read_to_end(&mut out).is_err();
            Ok((out, broken))
        }
    }
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

impl Source {
    pub fn path(&self) -> &Path {
        match self {
            Source::Mapped { path, .. } | Source::Stream { path, .. } => path,
        }
    }
}

/// A mapped file that shrinks under the map faults the reading thread with
/// `SIGBUS`. [`guard_mapped_reads`] turns that fault into the tool's usual
/// one-line bad-input error and exit code 2, naming the file, instead of a
/// crash. Only the binary installs it; a library caller keeps its own
/// signal disposition.
mod sigbus {
    use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

    /// The path of the file mapped last (leaked bytes, never freed, so the
    /// handler can read them at any time), and its length.
    static PATH: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
    static PATH_LEN: AtomicUsize = AtomicUsize::new(0);

    /// Set by [`install`]: paths are kept only when the handler reads them.
    static INSTALLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

    pub fn note_mapped(path: &std::path::Path) {
        if !INSTALLED.load(Ordering::Relaxed) {
            return;
        }
        let bytes: &'static [u8] = Box::leak(path.as_os_str().as_encoded_bytes().to_vec().into_boxed_slice());
        PATH_LEN.store(0, Ordering::SeqCst);
        PATH.store(bytes.as_ptr() as *mut u8, Ordering::SeqCst);
        PATH_LEN.store(bytes.len(), Ordering::SeqCst);
    }

    extern "C" fn on_sigbus(_: libc::c_int) {
        let write = |b: &[u8]| {
            // SAFETY: write(2) is async-signal-safe; the buffer is valid.
            unsafe { libc::write(2, b.as_ptr().cast(), b.len()) };
        };
        write(b"torchtriage: ");
        let (ptr, len) = (PATH.load(Ordering::SeqCst), PATH_LEN.load(Ordering::SeqCst));
        if !ptr.is_null() && len > 0 {
            // SAFETY: PATH points to `len` leaked bytes that are never freed.
            write(unsafe { std::slice::from_raw_parts(ptr, len) });
            write(b": ");
        }
        write(b"the file shrank while it was being read (truncated by another process?)\n");
        // SAFETY: _exit is async-signal-safe and ends the process at once.
        unsafe { libc::_exit(2) };
    }

    pub fn install() {
        // SAFETY: a zeroed sigaction with a plain handler is valid; the
        // handler only calls async-signal-safe functions.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigbus as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
        }
        INSTALLED.store(true, Ordering::Relaxed);
    }
}

/// Makes a mapped file that is truncated while it is read end the process
/// with the bad-input exit code (2) and one line naming the file, instead
/// of a `SIGBUS` crash. For the binary; batches avoid the case altogether by
/// reading files with [`ReadMode::Read`].
pub fn guard_mapped_reads() {
    sigbus::install();
}

/// A file that is not there is a bad input path; any other failure to open
/// it (no permission) is an I/O error. Both read `cannot open input: ...`.
fn open_error(e: std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::NotFound {
        Error::usage(format!("cannot open input: {e}"))
    } else {
        Error { message: format!("cannot open input: {e}"), ..Error::io(e) }
    }
}
