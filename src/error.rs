//! Errors: one type for every failure, rendered as a single line that names
//! the file and, where it applies, the byte offset. Bad input and bad usage
//! map to exit code 2.

use std::fmt;
use std::path::{Path, PathBuf};

/// What went wrong, coarsely, for exit codes and batch summaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The file could not be opened or read.
    Io,
    /// The bytes are not a usable trace (truncated, corrupt, not JSON, ...).
    BadInput,
    /// The command line or a user-supplied option file is wrong.
    Usage,
}

/// A failure with enough context for a one-line message.
#[derive(Clone, Debug, PartialEq)]
pub struct Error {
    pub kind: ErrorKind,
    pub path: Option<PathBuf>,
    /// Byte offset in the (decompressed) JSON text, where known.
    pub offset: Option<u64>,
    pub message: String,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn bad_input(message: impl Into<String>) -> Self {
        Error { kind: ErrorKind::BadInput, path: None, offset: None, message: message.into() }
    }

    pub fn usage(message: impl Into<String>) -> Self {
        Error { kind: ErrorKind::Usage, path: None, offset: None, message: message.into() }
    }

    pub fn io(err: std::io::Error) -> Self {
        Error { kind: ErrorKind::Io, path: None, offset: None, message: err.to_string() }
    }

    pub fn at(mut self, offset: u64) -> Self {
        self.offset = Some(offset);
        self
    }

    /// Attaches the file name unless one is already set.
    pub fn in_file(mut self, path: &Path) -> Self {
        if self.path.is_none() {
            self.path = Some(path.to_path_buf());
        }
        self
    }

    /// Process exit code for this error when it ends a single-file command.
    pub fn exit_code(&self) -> i32 {
        2
    }
}

/// A path as a message shows it: as `Path::display` does, with control
/// characters (a line break in a file name) escaped, so that the message
/// stays one line and still names the file.
pub fn shown(path: &Path) -> String {
    let text = path.display().to_string();
    if !text.chars().any(is_hidden_char) {
        return text;
    }
    text.chars().map(|c| if is_hidden_char(c) { escaped(c) } else { c.to_string() }).collect()
}

/// A path as a command line to copy would give it: [`shown`], in single
/// quotes (a quote as `'\''`) unless it is made only of characters no
/// shell reads otherwise, and after `./` when it starts with `-` (which
/// would read as an option).
pub fn shell_word(path: &Path) -> String {
    let mut text = shown(path);
    if text.starts_with('-') {
        text.insert_str(0, "./");
    }
    let plain = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        return text;
    }
    format!("'{}'", text.replace('\'', "'\\''"))
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = &self.path {
            write!(f, "{}: ", shown(p))?;
        }
        if let Some(o) = self.offset {
            write!(f, "byte {}: ", o)?;
        }
        f.write_str(&one_line(&self.message))
    }
}

/// Messages longer than this many characters are cut (a parser's message
/// can quote a whole value of the input).
const MESSAGE_CHARS: usize = 2_000;

/// A hidden character as Rust writes it in a string (`\n`, `\u{1b}`,
/// `\u{202e}`).
fn escaped(c: char) -> String {
    if c.is_control() {
        c.escape_debug().to_string()
    } else {
        c.escape_unicode().to_string()
    }
}

/// Whether a character of a name from a trace (or of a path) must not reach a reader
/// as it is: a control character (C0 or C1: `ESC` and `CSI` drive a
/// terminal), a bidirectional formatting character (`U+202E` and its
/// kin reorder the text after them, so a name reads as something else),
/// a line or paragraph separator (`U+2028`, `U+2029`: a line break to some
/// viewers) or an invisible one (zero-width space, byte-order mark).
/// Messages and the text renderers show such a character escaped.
pub fn is_hidden_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200b}' | '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{2028}' | '\u{2029}' | '\u{feff}'
                | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `text` as a message line shows it: line breaks as spaces, other hidden
/// characters ([`is_hidden_char`]) escaped, so that a terminal escape from
/// the input is shown, not obeyed, and cut after 2,000 characters
/// (`MESSAGE_CHARS`) with how much was left out.
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MESSAGE_CHARS + 64));
    for (n, (i, c)) in text.char_indices().enumerate() {
        if n == MESSAGE_CHARS {
            out.push_str(&format!("… ({} more bytes)", text.len() - i));
            break;
        }
        match c {
            '\n' | '\r' => out.push(' '),
            c if is_hidden_char(c) => out.push_str(&escaped(c)),
            c => out.push(c),
        }
    }
    out
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::io(e)
    }
}

#[cfg(test)]
mod tests {
    use super::shell_word;
    use std::path::Path;

    #[test]
    fn a_path_to_copy_into_a_command_line_is_quoted_when_a_shell_would_read_it() {
        assert_eq!(shell_word(Path::new("/data/job-1/ranks_0.json")), "/data/job-1/ranks_0.json");
        assert_eq!(shell_word(Path::new("sp ace")), "'sp ace'");
        assert_eq!(shell_word(Path::new("it's")), "'it'\\''s'");
        assert_eq!(shell_word(Path::new("-ranks")), "./-ranks");
        assert_eq!(shell_word(Path::new("a\nb")), "'a\\nb'");
        assert_eq!(shell_word(Path::new("$HOME")), "'$HOME'");
    }

    use super::*;

    #[test]
    fn a_line_break_in_a_file_name_is_shown_escaped_on_one_line() {
        let e = Error::bad_input("unexpected end of input").in_file(Path::new("/tmp/nl\nname\r.json")).at(16);
        assert_eq!(e.to_string(), "/tmp/nl\\nname\\r.json: byte 16: unexpected end of input");
        assert_eq!(shown(Path::new("plain/trace.json")), "plain/trace.json");
        assert_eq!(shown(Path::new("tab\there")), "tab\\there");
        assert_eq!(shown(Path::new("rank\u{202e}nosj.json")), "rank\\u{202e}nosj.json");
    }

    #[test]
    fn line_breaks_in_a_message_become_spaces() {
        assert_eq!(Error::usage("a\nb\r\nc").to_string(), "a b  c");
    }

    #[test]
    fn a_message_is_cut_and_its_terminal_escapes_shown() {
        let e = Error::bad_input("boom\u{1b}]0;title\u{7}\u{1b}[2J").in_file(Path::new("s.json"));
        assert_eq!(e.to_string(), "s.json: boom\\u{1b}]0;title\\u{7}\\u{1b}[2J");
        let long = format!("unknown variant `{}`", "x".repeat(10_000_000));
        let shown = Error::bad_input(long).to_string();
        assert_eq!(shown.chars().count(), MESSAGE_CHARS + "… (9998018 more bytes)".chars().count());
        assert!(shown.ends_with("xxx… (9998018 more bytes)"), "{}", &shown[shown.len() - 40..]);
    }
}
