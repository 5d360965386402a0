//! Atomic file writing: a temporary file beside the target, renamed into
//! place once complete, so a failed run never leaves half a file. A
//! symbolic link is followed to the file it names; a pipe or a device is
//! written directly, since it cannot be replaced; an open descriptor
//! (`/dev/stdout`, `/dev/fd/N`) is written through, as a shell's
//! redirection would be. Also the checks made before a run that its
//! outputs can be written.

use std::io::Write;
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Links followed before giving up (a loop, or a very long chain).
const MAX_LINKS: usize = 40;

/// What writing `path` goes to.
enum Sink {
    /// An open descriptor of this process: `/dev/stdout`, `/dev/stderr`,
    /// `/dev/fd/N`, `/proc/self/fd/N`. Writing there means writing to that
    /// descriptor, at its offset and in its mode (appending under `>>`), not
    /// to whatever file it has open, which is not even a path for a pipe
    /// (`pipe:[123]`).
    Descriptor(RawFd),
    /// A pipe, device or socket, opened and written in place.
    Special(PathBuf),
    /// A regular file (which need not exist yet), written atomically.
    File(PathBuf),
}

/// Where writing `path` lands, following a chain of symbolic links: an
/// open descriptor one of them names, else the file the chain ends at.
fn sink_of(path: &Path) -> std::io::Result<Sink> {
    let own = PathBuf::from(format!("/proc/{}/fd", std::process::id()));
    let descriptors = [Path::new("/dev/fd"), Path::new("/proc/self/fd"), Path::new("/proc/thread-self/fd"), &own];
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        if p.parent().is_some_and(|dir| descriptors.contains(&dir)) {
            if let Some(fd) = p.file_name().and_then(|n| n.to_str()).and_then(|n| n.parse().ok()) {
                return Ok(Sink::Descriptor(fd));
            }
        }
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let next = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if next.is_relative() => dir.join(next),
                    _ => next,
                };
            }
            _ if std::fs::metadata(&p).is_ok_and(|m| !m.is_file() && !m.is_dir()) => return Ok(Sink::Special(p)),
            _ => return Ok(Sink::File(p)),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// The open descriptor `path` names ([`Sink::Descriptor`]), if any.
fn descriptor_of(path: &Path) -> Option<RawFd> {
    match sink_of(path) {
        Ok(Sink::Descriptor(fd)) => Some(fd),
        _ => None,
    }
}

/// The temporary file an atomic write of `target` goes through.
fn temporary_for(target: &Path) -> PathBuf {
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let file_name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "report".into());
    dir.join(format!(".{file_name}.{}.tmp", std::process::id()))
}

/// Checks, before a run, that [`write_atomic`] will be able to write
/// `path`: its temporary file can be made beside it (and is removed again).
pub fn check_writable(path: &Path) -> std::io::Result<()> {
    match sink_of(path)? {
        Sink::Descriptor(_) | Sink::Special(_) => Ok(()),
        Sink::File(target) => {
            let tmp = temporary_for(&target);
            std::fs::File::create(&tmp)?;
            std::fs::remove_file(&tmp)
        }
    }
}

/// Checks, before a run, that files can be written into the directory
/// `dir`, which is made (with its parents) when the output is written:
/// the deepest part of it that exists takes a file.
pub fn check_directory_writable(dir: &Path) -> std::io::Result<()> {
    let existing = dir.ancestors().find(|a| a.as_os_str().is_empty() || a.is_dir()).unwrap_or(Path::new("."));
    let existing = if existing.as_os_str().is_empty() { Path::new(".") } else { existing };
    check_writable(&existing.join("probe"))
}

/// Whether `a` and `b` are the same file: the same one on disk when both
/// exist (links followed), else the same absolute path.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        (Err(_), Err(_)) => match (std::path::absolute(a), std::path::absolute(b)) {
            (Ok(x), Ok(y)) => x == y,
            _ => false,
        },
        _ => false,
    }
}

/// Whether `path` names an open descriptor of this process
/// (`/dev/stdout`, `/dev/fd/N`).
pub fn is_descriptor(path: &Path) -> bool {
    descriptor_of(path).is_some()
}

/// Opens `path` to write a stream into (not atomically): an open
/// descriptor it names is written through, anything else is created or
/// truncated.
pub fn create_stream(path: &Path) -> std::io::Result<std::fs::File> {
    match descriptor_of(path) {
        Some(fd) => duplicate(fd),
        None => std::fs::File::create(path),
    }
}

/// A handle of its own on the open descriptor `fd` (the same open file: its
/// offset and mode are shared).
fn duplicate(fd: RawFd) -> std::io::Result<std::fs::File> {
    // SAFETY: dup only reads the descriptor number; the new descriptor it
    // returns is owned by nothing else, so the File may own it.
    let own = unsafe { libc::dup(fd) };
    if own < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `own` is a fresh descriptor nothing else owns.
    Ok(unsafe { std::fs::File::from_raw_fd(own) })
}

/// Writes a file through a temporary file beside it, renamed into place
/// once complete; on any error the temporary file is removed and `path`
/// is untouched. A symbolic link is written through; a pipe, device or
/// socket is written directly; an open descriptor (`/dev/stdout`) is
/// written through.
pub fn write_atomic(path: &Path, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    let target = match sink_of(path).map_err(|e| Error::io(e).in_file(path))? {
        Sink::Descriptor(fd) => {
            // A reader that stopped reading (`| head`) is no error, as on
            // stdout.
            return match duplicate(fd).and_then(|f| write_to(f, write)) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::io(e).in_file(path)),
                _ => Ok(()),
            };
        }
        Sink::Special(target) => return write_directly(&target, write).map_err(|e| Error::io(e).in_file(path)),
        Sink::File(target) => target,
    };
    let path = target.as_path();
    let tmp = temporary_for(path);
    let result = (|| {
        let file = std::fs::File::create(&tmp)?;
        let mut out = std::io::BufWriter::with_capacity(1 << 16, file);
        write(&mut out)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(e).in_file(path)
    })
}

/// Writes a pipe or device in place: it has no directory entry to replace.
fn write_directly(path: &Path, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> std::io::Result<()> {
    write_to(std::fs::OpenOptions::new().write(true).open(path)?, write)
}

fn write_to(file: std::fs::File, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, file);
    write(&mut out)?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn descriptors_are_named_directly_or_through_links() {
        assert_eq!(descriptor_of(Path::new("/dev/stdout")), Some(1));
        assert_eq!(descriptor_of(Path::new("/dev/stderr")), Some(2));
        assert_eq!(descriptor_of(Path::new("/dev/fd/7")), Some(7));
        assert_eq!(descriptor_of(Path::new("/proc/self/fd/3")), Some(3));
        assert_eq!(descriptor_of(Path::new("/dev/null")), None);
        assert_eq!(descriptor_of(Path::new("report.md")), None);
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("out");
        std::os::unix::fs::symlink("/dev/stdout", &link).unwrap();
        assert_eq!(descriptor_of(&link), Some(1));
    }

    #[test]
    fn the_same_file_by_link_or_by_path() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.json");
        std::fs::write(&a, "{}").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        assert!(same_file(&a, &link));
        assert!(same_file(&a, &dir.path().join(".").join("a.json")));
        assert!(!same_file(&a, &dir.path().join("b.json")));
        // Neither there yet: the same absolute path.
        assert!(same_file(Path::new("x.jsonl"), &std::env::current_dir().unwrap().join("x.jsonl")));
        assert!(!same_file(Path::new("x.jsonl"), Path::new("y.jsonl")));
    }

    #[test]
    fn a_writable_place_is_checked_without_leaving_a_file() {
        let dir = tempfile::tempdir().unwrap();
        check_writable(&dir.path().join("r.md")).unwrap();
        check_directory_writable(&dir.path().join("new/deeper")).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        assert!(check_writable(&dir.path().join("missing/r.md")).is_err());
    }
}
