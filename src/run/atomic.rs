//! Atomic file writing: a temporary file beside the target, renamed into
//! place once complete, so a failed run never leaves half a file.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// Writes a file through a temporary file beside it, renamed into place
/// once complete; on any error the temporary file is removed and `path`
/// is untouched.
pub fn write_atomic(path: &Path, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
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
