//! Where a report goes and in which format: `--format` and `--output`
//! turned into a validated [`Destination`], and the atomic writing of the
//! rendered report (a temporary file renamed into place, so a failed run
//! never leaves half a report).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::report::render::{renderer, Format, RenderOptions, Rendered, Renderer};
pub use crate::run::atomic::write_atomic;
use crate::run::atomic::{check_directory_writable, check_writable, same_file};

/// `--format` and `--output`, shared by the report commands.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct OutputArgs {
    /// Output format. Default: `table` when stdout is a terminal, else
    /// `markdown`; with `--output`, the format the file's extension names
    /// (`.html`, `.json`, `.md`, `.txt`), else `markdown`.
    #[arg(long, short = 'f', value_enum)]
    pub format: Option<Format>,
    /// Write the report to this file, in a directory that exists (for
    /// `--format csv`: this directory, created when missing) instead of
    /// stdout; `-` is stdout. A regular file is written
    /// atomically (through a symbolic link, to the file it names); a pipe,
    /// device or open descriptor (`/dev/stdout`) is written directly. A
    /// trace the report reads is never written over.
    #[arg(long, short = 'o', value_name = "PATH")]
    pub output: Option<PathBuf>,
}

/// Where the rendered report goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    Stdout,
    File(PathBuf),
    /// A directory of files (CSV).
    Dir(PathBuf),
}

/// The validated output settings.
pub struct Output {
    pub format: Format,
    pub destination: Destination,
    pub render: RenderOptions,
    /// No warnings on stderr (`--quiet`).
    pub quiet: bool,
}

/// The width the table format fits: `COLUMNS` when set to a number, else the
/// width of the terminal stdout is when the report goes there, else 120 (a
/// pipe or a file).
fn terminal_width(to_stdout: bool) -> usize {
    let terminal = if to_stdout { stdout_terminal_columns() } else { None };
    width_from(std::env::var("COLUMNS").ok().as_deref(), terminal)
}

/// `COLUMNS` (a positive number) before the terminal's own width, each at
/// least the narrowest table the format lays out.
fn width_from(columns: Option<&str>, terminal: Option<usize>) -> usize {
    columns
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&w| w > 0)
        .or(terminal)
        .map_or(120, |w| w.max(crate::report::table::MIN_WIDTH))
}

/// Whether `path` ends in a compressed file's extension (`.gz`, `.zst`,
/// `.bz2`, `.xz`).
fn names_compression(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| ["gz", "zst", "bz2", "xz"].iter().any(|c| e.eq_ignore_ascii_case(c)))
}

/// The refusal of an `--output` with a compressed file's name: the report
/// is written plain, and under a `.gz` name it would break whatever reads
/// the file as compressed. `names` are the extensions to use instead.
fn compressed_name(p: &Path, names: &str) -> Error {
    Error::usage(format!(
        "--output: the report is written uncompressed: name the file {names}, or pipe stdout to a compressor"
    ))
    .in_file(p)
}

/// The columns of the terminal stdout writes to, if it is one.
fn stdout_terminal_columns() -> Option<usize> {
    let mut ws = libc::winsize { ws_row: 0, ws_col: 0, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: TIOCGWINSZ fills the `winsize` it is given and reads nothing else;
    // on a descriptor that is not a terminal it fails and leaves it as it was.
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    (ok && ws.ws_col > 0).then_some(usize::from(ws.ws_col))
}

impl OutputArgs {
    /// Resolves the defaults and checks the combination; `quiet` (`--quiet`)
    /// keeps the output's warnings off stderr.
    pub fn resolve(&self, quiet: bool) -> Result<Output> {
        // `-o -` is stdout, as `-` is stdin for an input.
        let output = self.output.as_ref().filter(|p| p.as_os_str() != "-");
        let format = match (self.format, output) {
            (Some(f), _) => f,
            (None, Some(p)) if p.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv")) => {
                // CSV is one file per table: a `.csv` file name cannot hold
                // the report, and markdown under that name would mislead.
                return Err(Error::usage(
                    "CSV output is one file per table: give --format csv and a directory (-o DIR)",
                )
                .in_file(p));
            }
            (None, Some(p)) => Format::from_extension(p).unwrap_or(Format::Markdown),
            (None, None) if std::io::stdout().is_terminal() => Format::Table,
            (None, None) => Format::Markdown,
        };
        if let Some(p) = output.filter(|p| !format.is_directory() && names_compression(p)) {
            // The report is written plain: under a `.gz` name it would
            // break whatever reads the file as compressed. (A directory of
            // CSV files may be named for its trace, `t.json.gz`.)
            return Err(compressed_name(p, ".json, .md, .html or .txt"));
        }
        let destination = match (output, format.is_directory()) {
            (None, true) if self.output.is_some() => {
                return Err(Error::usage("--format csv writes one file per table: give a directory, not -"));
            }
            (None, true) => {
                return Err(Error::usage("--format csv writes one file per table: give --output DIR"));
            }
            (None, false) => Destination::Stdout,
            (Some(p), true) if p.exists() && !p.is_dir() => {
                return Err(
                    Error::usage("--format csv writes one file per table into a directory; this is not one").in_file(p)
                );
            }
            (Some(p), true) => {
                // Created when missing, parents too; refused now, before
                // the run, if something in its path is a file.
                if let Some(file) = p.ancestors().skip(1).find(|a| a.exists()).filter(|a| !a.is_dir()) {
                    return Err(Error::usage("--output: this is not a directory to create one in").in_file(file));
                }
                check_directory_writable(p).map_err(|e| unwritable("--output", e, p))?;
                Destination::Dir(p.clone())
            }
            (Some(p), false) => file_destination(p)?,
        };
        let to_stdout = matches!(destination, Destination::Stdout);
        Ok(Output { format, destination, render: RenderOptions { width: terminal_width(to_stdout) }, quiet })
    }
}

/// A report file's destination, checked before the run (which may take
/// minutes) rather than when the report is written: not a directory, in a
/// directory that exists, writable.
pub fn file_destination(p: &Path) -> Result<Destination> {
    if p.is_dir() {
        return Err(Error::usage("--output names a directory; give a file").in_file(p));
    }
    let parent = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        // The path given is named, and the folder at fault in the message.
        let folder = crate::error::shown(parent);
        let why = if parent.exists() {
            format!("--output: {folder} is not a directory, so no report can be written in it")
        } else {
            format!("--output: the directory to write the report in, {folder}, does not exist")
        };
        return Err(Error::usage(why).in_file(p));
    }
    check_writable(p).map_err(|e| unwritable("--output", e, p))?;
    Ok(Destination::File(p.to_path_buf()))
}

/// The error for an output `option` names that cannot be written, found
/// before the run.
pub fn unwritable(option: &str, e: std::io::Error, path: &Path) -> Error {
    Error::usage(format!("{option}: cannot write here: {e}")).in_file(path)
}

impl Output {
    /// Where a command without report formats (`stats`) writes its text:
    /// `output` (checked as [`file_destination`]), else stdout (also for
    /// `-`). A compressed file's name is refused, as for every report.
    pub fn plain(output: Option<&Path>, quiet: bool) -> Result<Output> {
        let destination = match output.filter(|p| p.as_os_str() != "-") {
            Some(p) if names_compression(p) => return Err(compressed_name(p, ".json or .txt")),
            Some(p) => file_destination(p)?,
            None => Destination::Stdout,
        };
        let width = terminal_width(matches!(destination, Destination::Stdout));
        Ok(Output { format: Format::Markdown, destination, render: RenderOptions { width }, quiet })
    }

    /// Refuses a report file that is one of `inputs`, the traces the report
    /// is made from: writing it would replace the trace.
    pub fn check_not_input<'a>(&self, inputs: impl IntoIterator<Item = &'a Path>) -> Result<()> {
        self.check_not_among(inputs, "a trace")
    }

    /// Refuses a report file below one of the input directories `inputs`
    /// (other inputs are passed over) that is a trace, whether or not the
    /// run reads it (`triage DIR` analyses one rank, and writing over
    /// another rank's trace would lose it; a trace whose metadata hides its
    /// `traceEvents` from discovery counts too), or whose name would make
    /// the report a trace to the next run (`*.trace.json`).
    pub fn check_not_trace_below<'a>(&self, inputs: impl IntoIterator<Item = &'a Path>) -> Result<()> {
        let Destination::File(out) = &self.destination else { return Ok(()) };
        let Some(name) = out.file_name() else { return Ok(()) };
        let parent = out.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let exists = std::fs::metadata(out).is_ok_and(|m| m.is_file());
        let real = match (exists, out.canonicalize(), parent.canonicalize()) {
            (true, Ok(real), _) => real,
            (false, _, Ok(dir)) => dir.join(name),
            _ => return Ok(()),
        };
        let below = |dir: &Path| dir.is_dir() && dir.canonicalize().is_ok_and(|d| real.starts_with(d));
        if !inputs.into_iter().any(below) {
            return Ok(());
        }
        let refuse = |why: &str| Err(Error::usage(format!("--output {why}")).in_file(out));
        let lower = name.to_string_lossy().to_lowercase();
        if crate::run::discover::is_trace_by_name(&lower) && !exists {
            return refuse("has a trace's name (.trace.json) in the input directory, so the next run would read the report as a trace");
        }
        if exists
            && (crate::run::discover::file_looks_like_trace(&real) || crate::run::sniff::file_names_trace_events(&real))
        {
            return refuse("names a trace in the input directory, which it would replace");
        }
        Ok(())
    }

    /// Refuses a report file that is one of `inputs`, which are `what` (`a
    /// trace`, `a summary`) the report is made from.
    pub fn check_not_among<'a>(&self, inputs: impl IntoIterator<Item = &'a Path>, what: &str) -> Result<()> {
        let Destination::File(out) = &self.destination else { return Ok(()) };
        let input = |input: &&Path| std::fs::metadata(input).is_ok_and(|m| m.is_file()) && same_file(out, input);
        if inputs.into_iter().any(|i| input(&i)) {
            return Err(Error::usage(format!(
                "--output names {what} this report is made from, which it would replace"
            ))
            .in_file(out));
        }
        Ok(())
    }

    pub fn renderer(&self) -> Box<dyn Renderer> {
        renderer(self.format, self.render)
    }

    /// Writes `rendered` to the destination. A file or directory that
    /// cannot be written is named as the report's destination.
    pub fn emit(&self, rendered: Rendered<'_>) -> Result<()> {
        let stdout = matches!(self.destination, Destination::Stdout);
        self.emit_to(rendered).map_err(|mut e| {
            if !stdout && e.kind == crate::error::ErrorKind::Io {
                e.message = format!("cannot write the report: {}", e.message);
            }
            e
        })
    }

    fn emit_to(&self, rendered: Rendered<'_>) -> Result<()> {
        match (&self.destination, rendered) {
            (Destination::Stdout, Rendered::Text(t)) => super::print_report(&t),
            (Destination::Stdout, Rendered::Stream(w)) => super::print_report_with(w),
            (Destination::File(p), Rendered::Text(t)) => write_atomic(p, |out| write_text(out, &t)),
            (Destination::File(p), Rendered::Stream(w)) => write_atomic(p, w),
            (Destination::Dir(dir), Rendered::Files(files)) => {
                write_files(dir, &files)?;
                let stale = stale_files(dir, &files);
                if !self.quiet && !stale.is_empty() {
                    let _ = writeln!(
                        std::io::stderr(),
                        "torchtriage: warning: {}: {} {} left from an earlier report (this one does not write {})",
                        crate::error::shown(dir),
                        stale.join(", "),
                        if stale.len() == 1 { "is" } else { "are" },
                        if stale.len() == 1 { "it" } else { "them" },
                    );
                }
                Ok(())
            }
            (Destination::Dir(dir), Rendered::Text(t)) => write_files(dir, &[("report.txt", t)]),
            (Destination::Dir(dir), Rendered::Stream(w)) => write_atomic(&dir.join("report.txt"), w),
            (_, Rendered::Files(files)) => {
                // A file renderer asked for one stream: the files one after
                // the other, each under its name.
                let mut text = String::new();
                for (name, body) in files {
                    text.push_str(&format!("# {name}\n{body}\n"));
                }
                self.emit_text(text)
            }
        }
    }

    fn emit_text(&self, text: String) -> Result<()> {
        match &self.destination {
            Destination::File(p) => write_atomic(p, |out| write_text(out, &text)),
            _ => super::print_report(&text),
        }
    }
}

fn write_text(out: &mut dyn Write, text: &str) -> std::io::Result<()> {
    out.write_all(text.as_bytes())?;
    if !text.is_empty() && !text.ends_with('\n') {
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// Writes each file into `dir` (created when missing), each atomically.
fn write_files(dir: &Path, files: &[(&'static str, String)]) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(e).in_file(dir))?;
    for (name, body) in files {
        write_atomic(&dir.join(name), |out| out.write_all(body.as_bytes()))?;
    }
    Ok(())
}

/// The CSV files of another kind of report in `dir` (a triage's beside a
/// batch's just written), which a reader would take for part of this one.
fn stale_files(dir: &Path, files: &[(&'static str, String)]) -> Vec<&'static str> {
    crate::report::csv::FILE_NAMES
        .iter()
        .copied()
        .filter(|name| !files.iter().any(|(written, _)| written == name) && dir.join(name).is_file())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_width_is_columns_then_the_terminal_then_120() {
        assert_eq!(width_from(Some("100"), Some(80)), 100);
        assert_eq!(width_from(None, Some(80)), 80);
        assert_eq!(width_from(Some("wide"), Some(80)), 80);
        assert_eq!(width_from(Some("0"), None), 120);
        assert_eq!(width_from(None, None), 120);
        // A terminal narrower than the narrowest layout gets that layout,
        // not the 120 columns of a pipe.
        assert_eq!(width_from(Some("20"), None), crate::report::table::MIN_WIDTH);
        assert_eq!(width_from(None, Some(30)), crate::report::table::MIN_WIDTH);
    }

    #[test]
    fn atomic_write_leaves_nothing_on_failure() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.html");
        std::fs::write(&p, "old").unwrap();
        let err = write_atomic(&p, |out| {
            out.write_all(b"half")?;
            Err(std::io::Error::other("renderer failed"))
        });
        assert!(err.is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
        write_atomic(&p, |out| out.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
    }

    #[test]
    fn csv_needs_a_directory_and_extensions_pick_formats() {
        let csv = OutputArgs { format: Some(Format::Csv), output: None };
        assert!(csv.resolve(false).is_err());
        let html = OutputArgs { format: None, output: Some(PathBuf::from("r.html")) };
        assert_eq!(html.resolve(false).unwrap().format, Format::Html);
        let other = OutputArgs { format: None, output: Some(PathBuf::from("r.out")) };
        assert_eq!(other.resolve(false).unwrap().format, Format::Markdown);
        // A `.csv` file name alone is refused rather than given markdown.
        let one_csv = OutputArgs { format: None, output: Some(PathBuf::from("r.CSV")) };
        assert!(one_csv.resolve(false).err().is_some_and(|e| e.message.contains("--format csv")));
        let csv_dir = OutputArgs { format: Some(Format::Csv), output: Some(PathBuf::from("tables.csv")) };
        assert_eq!(csv_dir.resolve(false).unwrap().format, Format::Csv);
        // An existing file is not a directory to write the tables into.
        let file = tempfile::NamedTempFile::new().unwrap();
        let csv_file = OutputArgs { format: Some(Format::Csv), output: Some(file.path().to_path_buf()) };
        assert!(csv_file.resolve(false).err().is_some_and(|e| e.message.contains("not one")));
        // A compressed file's name is refused, whatever the format: the
        // report would be plain text under it.
        for (format, name) in [(None, "r.json.gz"), (Some(Format::Json), "r.json.ZST"), (None, "r.md.xz")] {
            let compressed = OutputArgs { format, output: Some(PathBuf::from(name)) };
            assert!(compressed.resolve(false).err().is_some_and(|e| e.message.contains("uncompressed")), "{name}");
        }
        // A directory of CSV files may be named for its trace.
        let dir = tempfile::tempdir().unwrap();
        let tables = OutputArgs { format: Some(Format::Csv), output: Some(dir.path().join("t.json.gz")) };
        assert_eq!(tables.resolve(false).unwrap().format, Format::Csv);
    }

    #[test]
    fn an_output_that_cannot_be_written_is_refused_before_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plain");
        std::fs::write(&file, "x").unwrap();
        let resolve = |format, p: PathBuf| OutputArgs { format, output: Some(p) }.resolve(false);
        // A report file in a directory that does not exist, or under a file.
        let missing = resolve(None, dir.path().join("no/such/r.md")).err().expect("missing directory");
        assert!(missing.message.contains("does not exist"), "{}", missing.message);
        assert!(missing.to_string().contains("no/such/r.md: --output: the directory"), "{missing}");
        assert!(missing.message.ends_with("no/such, does not exist"), "{missing}");
        let under_file = resolve(None, file.join("r.md")).err().expect("a file as the directory");
        assert!(under_file.message.contains("not a directory"), "{under_file}");
        // A CSV directory is created with its parents, unless one is a file.
        assert!(resolve(Some(Format::Csv), dir.path().join("a/b/c")).is_ok());
        let under_file = resolve(Some(Format::Csv), file.join("a/b")).err().expect("file in the path");
        assert!(under_file.to_string().contains("plain"), "{under_file}");
        // A bare file name is written in the current directory.
        assert!(resolve(None, PathBuf::from("r.md")).is_ok());
    }
}
