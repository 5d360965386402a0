//! Progress on stderr: an indicatif bar (bytes, rate, ETA) driven by a shared
//! byte counter, shown only when stderr is a terminal and not `--quiet`;
//! loading a trace with that bar ([`load_trace`]); and phase timing for
//! developers ([`phase`]).

use std::io::IsTerminal;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A running progress display; stops when dropped.
pub struct Progress {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts a bar for `total` bytes (unknown for stdin) labelled `label`,
    /// polling `counter`. Returns an inert value when output is not wanted.
    pub fn start(label: String, total: Option<u64>, counter: Arc<AtomicU64>, quiet: bool) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        if quiet || !std::io::stderr().is_terminal() {
            return Progress { stop, handle: None };
        }
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let bar = match total {
                Some(t) => indicatif::ProgressBar::new(t),
                None => indicatif::ProgressBar::new_spinner(),
            };
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            let style = indicatif::ProgressStyle::with_template(
                // The file's name last, cut to what the terminal has left:
                // the bar stays on one line.
                "[{bar:24}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta} {wide_msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> ");
            bar.set_style(style);
            bar.set_message(label);
            while !flag.load(Ordering::Relaxed) {
                bar.set_position(counter.load(Ordering::Relaxed));
                std::thread::sleep(Duration::from_millis(100));
            }
            bar.finish_and_clear();
        });
        Progress { stop, handle: Some(handle) }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The framework-detection sample of a trace that is not loaded in full
/// ([`crate::ingest::framework_sample`]); announced like [`load_trace`] as
/// `timing: sample <path>`.
pub fn framework_sample(path: &std::path::Path) -> Option<String> {
    phase(&format!("sample {}", path.display()));
    crate::ingest::framework_sample(path)
}

/// Phase timings for developers: with `TT_TIMING` set in the environment,
/// prints `timing: <phase> <ms since the first call>` on stderr, on Linux
/// the resident set now and its peak so far (`rss`, `hwm`, in KiB), and the
/// process's CPU time so far (`cpu`, user and system, in ms), so that the
/// difference of two lines shows how many cores a phase kept busy.
pub fn phase(name: &str) {
    use std::sync::OnceLock;
    use std::time::Instant;
    static START: OnceLock<Option<Instant>> = OnceLock::new();
    let start = START.get_or_init(|| std::env::var_os("TT_TIMING").map(|_| Instant::now()));
    if let Some(t0) = start {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let field = |key: &str| {
            status.lines().find_map(|l| l.strip_prefix(key)).map_or("?", |v| v.trim().trim_end_matches(" kB"))
        };
        let cpu = cpu_ms().map_or_else(|| "?".to_string(), |ms| format!("{ms:.1}"));
        let _ = writeln!(
            std::io::stderr(),
            "timing: {name} {:.1} ms rss {} hwm {} cpu {cpu} ms",
            t0.elapsed().as_secs_f64() * 1e3,
            field("VmRSS:"),
            field("VmHWM:")
        );
    }
}

/// CPU time (user and system) the process has used so far, in ms.
fn cpu_ms() -> Option<f64> {
    #[cfg(unix)]
    {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage fills the struct it is given and has no other
        // effect; the struct is read only when it reports success.
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) } == 0 {
            // SAFETY: initialised by the successful call above.
            let usage = unsafe { usage.assume_init() };
            let ms = |t: libc::timeval| t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3;
            return Some(ms(usage.ru_utime) + ms(usage.ru_stime));
        }
    }
    None
}

/// Loads one trace (plain, gzip, zstd or `-`), with a progress bar on a
/// terminal unless `quiet`. With `TT_TIMING` set, says so on stderr
/// (`timing: parse <path>`), so that a run's parses can be counted.
/// Plain files are mapped or read as `mode` says.
pub fn load_trace(
    path: &std::path::Path,
    quiet: bool,
    mode: crate::input::ReadMode,
) -> crate::Result<crate::columns::Trace> {
    phase(&format!("parse {}", path.display()));
    let opened = crate::input::open_with(path, mode)?;
    let label = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let _bar = Progress::start(label, opened.disk_len, opened.consumed.clone(), quiet);
    crate::ingest::load_opened(path, opened, &crate::ingest::IngestOptions::default())
}
