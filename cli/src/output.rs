//! Writing results: whole lines in chunks no larger than a pipe writes atomically, every
//! write error handled (never a panic), and a closed stdout told apart from a failed one.
//!
//! What a kill leaves behind (cli/README.md): through a pipe, whole lines only; in a
//! regular file, whole lines except a last one cut at a page boundary, because Linux
//! checks for a fatal signal between the pages of a write to a file. No chunking can
//! avoid that: a line straddling a page boundary is cut by a kill either inside the one
//! write that holds it or between the two that do.

use std::error::Error;
use std::fmt;
use std::io::{self, Write};

/// The most bytes one chunk holds: PIPE_BUF on Linux, the size up to which a write to a
/// pipe is atomic. A reader of a pipe never sees half a line, even when this process is
/// killed (between two writes, or during one). A write to a regular file is not atomic:
/// a kill during it can cut it at a page boundary of the file.
pub(crate) const CHUNK: usize = 4096;

/// Why a command stopped early.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Stdout was closed by its reader (as by `head`): stop quietly.
    ClosedPipe,
    /// Stdout could not be written for another reason (a full disk, /dev/full).
    Stdout(io::Error),
    /// Anything else: printed with its chain of causes.
    Error(Box<dyn Error + Send + Sync>),
}

impl Failure {
    /// A failure described in words.
    pub(crate) fn msg(text: impl Into<String>) -> Self {
        Failure::Error(text.into().into())
    }

    /// A failure writing stdout.
    pub(crate) fn stdout(err: io::Error) -> Self {
        if err.kind() == io::ErrorKind::BrokenPipe {
            Failure::ClosedPipe
        } else {
            Failure::Stdout(err)
        }
    }
}

impl<E: Error + Send + Sync + 'static> From<E> for Failure {
    fn from(err: E) -> Self {
        Failure::Error(Box::new(err))
    }
}

/// An error with what was being done, keeping the error as its source.
#[derive(Debug)]
pub(crate) struct Context {
    pub(crate) doing: String,
    pub(crate) source: Box<dyn Error + Send + Sync>,
}

impl fmt::Display for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.doing)
    }
}

impl Error for Context {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&*self.source)
    }
}

/// Lines to stdout, written in chunks of whole lines of at most [`CHUNK`] bytes.
pub(crate) struct Lines<'a> {
    out: &'a mut dyn Write,
    buf: Vec<u8>,
}

impl<'a> Lines<'a> {
    pub(crate) fn new(out: &'a mut dyn Write) -> Self {
        Self {
            out,
            buf: Vec::with_capacity(CHUNK),
        }
    }

    /// Adds one line (the newline is added here).
    pub(crate) fn line(&mut self, text: impl fmt::Display) -> Result<(), Failure> {
        let start = self.buf.len();
        // Writing to a Vec fails only if a Display implementation does.
        write!(self.buf, "{text}").map_err(|e| Failure::msg(format!("formatting output: {e}")))?;
        self.buf.push(b'\n');
        if self.buf.len() > CHUNK && start > 0 {
            // The new line does not fit: write the whole lines before it.
            write_chunk(self.out, &self.buf[..start])?;
            self.buf.drain(..start);
        }
        if self.buf.len() >= CHUNK {
            // A single line of a chunk or more: it goes alone.
            self.flush()?;
        }
        Ok(())
    }

    /// Adds every line of `text` (which may end in a newline or not).
    pub(crate) fn text(&mut self, text: &str) -> Result<(), Failure> {
        text.lines().try_for_each(|line| self.line(line))
    }

    /// Writes what is pending.
    pub(crate) fn flush(&mut self) -> Result<(), Failure> {
        if !self.buf.is_empty() {
            write_chunk(self.out, &self.buf)?;
            self.buf.clear();
        }
        self.out.flush().map_err(Failure::stdout)
    }
}

fn write_chunk(out: &mut dyn Write, chunk: &[u8]) -> Result<(), Failure> {
    out.write_all(chunk).map_err(Failure::stdout)?;
    // Stdout buffers by line itself: pass the chunk on now, in one piece.
    out.flush().map_err(Failure::stdout)
}

/// Writes a message to stderr as one write (through [`Scrubbed`](crate::Scrubbed), which
/// also cuts over-long lines). Errors are dropped: there is nowhere left to report them,
/// and the exit status already says something failed.
pub(crate) fn report(stderr: &mut dyn Write, message: &str) {
    let mut text = String::with_capacity(message.len() + 1);
    text.push_str(message);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let _ = stderr.write_all(text.as_bytes());
    let _ = stderr.flush();
}

/// The most characters of one stderr line: enough for any message of ours, and a cap on
/// user input echoed back (clap repeats unexpected arguments whole).
const MAX_LINE_CHARS: usize = 1000;

/// `text` with every line longer than [`MAX_LINE_CHARS`] cut short, saying so.
pub(crate) fn cut_long_lines(text: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if text.len() <= MAX_LINE_CHARS {
        return text.into();
    }
    let mut out = Vec::with_capacity(text.len().min(4 * MAX_LINE_CHARS));
    for line in text.split_inclusive(|&b| b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let shown = String::from_utf8_lossy(body);
        let chars = shown.chars().count();
        if chars <= MAX_LINE_CHARS {
            out.extend_from_slice(line);
            continue;
        }
        let head: String = shown.chars().take(200).collect();
        out.extend_from_slice(format!("{head}… (line cut: {chars} characters)").as_bytes());
        if line.ends_with(b"\n") {
            out.push(b'\n');
        }
    }
    out.into()
}

/// `uidgen: error: cause: cause…`, each cause once.
pub(crate) fn chain(err: &(dyn Error + 'static)) -> String {
    let mut text = format!("uidgen: {err}");
    let mut source = err.source();
    let mut missing = missing_tag(err);
    while let Some(cause) = source {
        let shown = cause.to_string();
        // A wrapper that repeats its cause's text adds nothing.
        if !shown.is_empty() && !text.contains(&shown) {
            text.push_str(": ");
            text.push_str(&shown);
        }
        missing = missing.or_else(|| missing_tag(cause));
        source = cause.source();
    }
    match missing {
        Some((library, command)) => text.replace(&library, &command),
        None => text,
    }
}

/// A missing tag's message as the library words it (its methods), and as this command
/// words it (its flags).
fn missing_tag(err: &(dyn Error + 'static)) -> Option<(String, String)> {
    let missing = match err.downcast_ref::<uidgen::SegmentError>() {
        Some(uidgen::SegmentError::Store(store)) => store,
        _ => err.downcast_ref::<uidgen::StoreError>()?,
    };
    let uidgen::StoreError::MissingTag { tag, location, .. } = missing else {
        return None;
    };
    Some((
        missing.to_string(),
        format!(
            "tag {tag:?} does not exist in {location}: create it with `uidgen segment \
             create --tag {tag} --step N [--start FIRST]`; if it existed before (a store \
             restored or emptied), FIRST must be above the last ID it handed out"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records each write it is given.
    #[derive(Default)]
    struct Writes(Vec<Vec<u8>>);

    impl Write for Writes {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_write_is_whole_lines_of_at_most_a_chunk() {
        let mut writes = Writes::default();
        let mut lines = Lines::new(&mut writes);
        for i in 0..10_000u64 {
            lines.line(i * 1_000_000_007).unwrap();
        }
        lines.flush().unwrap();
        assert!(writes.0.len() > 10);
        let mut all = Vec::new();
        for write in &writes.0 {
            assert!(write.len() <= CHUNK, "{}", write.len());
            assert_eq!(write.last(), Some(&b'\n'));
            all.extend_from_slice(write);
        }
        let expected: String = (0..10_000u64)
            .map(|i| format!("{}\n", i * 1_000_000_007))
            .collect();
        assert_eq!(all, expected.as_bytes());
    }

    #[test]
    fn a_closed_pipe_is_not_an_error_to_report() {
        assert!(matches!(
            Failure::stdout(io::ErrorKind::BrokenPipe.into()),
            Failure::ClosedPipe
        ));
        assert!(matches!(
            Failure::stdout(io::Error::from_raw_os_error(28)),
            Failure::Stdout(_)
        ));
    }

    #[test]
    fn long_lines_are_cut() {
        let text = format!("short\n{}\nshort\n", "x".repeat(100_000));
        let cut = cut_long_lines(text.as_bytes());
        assert!(cut.len() < 400, "{}", cut.len());
        assert!(cut.starts_with(b"short\nxxx") && cut.ends_with(b"characters)\nshort\n"));
        assert_eq!(&*cut_long_lines(b"a\nb"), b"a\nb");
    }
}
