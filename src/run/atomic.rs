//! Atomic file writing: a temporary file beside the target, renamed into
//! place once complete, so a failed run never leaves half a file. A
//! symbolic link is followed to the file it names; a pipe or a device is
//! written directly, since it cannot be replaced.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Links followed before giving up (a loop, or a very long chain).
const MAX_LINKS: usize = 40;

/// Where writing `path` lands: the file a chain of symbolic links ends at
/// (which need not exist yet), else `path` itself.
fn target_of(path: &Path) -> std::io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let next = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if next.is_relative() => dir.join(next),
                    _ => next,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// Writes a file through a temporary file beside it, renamed into place
/// once complete; on any error the temporary file is removed and `path`
/// is untouched. A symbolic link is written through; a pipe, device or
/// socket is written directly.
pub fn write_atomic(path: &Path, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    let target = target_of(path).map_err(|e| Error::io(e).in_file(path))?;
    if std::fs::metadata(&target).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return write_directly(&target, write).map_err(|e| Error::io(e).in_file(path));
    }
    let path = target.as_path();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "report".into());
    let tmp = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
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
    let file = std::fs::OpenOptions::new().write(true).open(path)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 16, file);
    write(&mut out)?;
    out.flush()
}
