//! IDs read from stdin: words separated by white space, streamed, with bounded memory.

use crate::output::{Context, Failure};
use std::io::{self, BufRead};

/// Bytes kept of one word. A longer word cannot be an ID (at most 19 digits, plus any
/// leading zeros a person might write), and a stream with no white space must not fill
/// memory.
pub(crate) const MAX_WORD: usize = 1024;

/// One word of the input.
pub(crate) struct Word<'a> {
    /// Its first [`MAX_WORD`] bytes.
    pub(crate) text: &'a [u8],
    /// Its whole length in bytes.
    pub(crate) len: usize,
    /// The line it is on, from 1.
    pub(crate) line: u64,
}

/// Calls `each` for every word of `input`, in order. `before_wait` is called before each
/// read that may block, so output for the input so far can be written out first (an
/// interactive user sees each answer as soon as the line is typed).
pub(crate) fn for_each_word(
    input: &mut dyn BufRead,
    before_wait: &mut dyn FnMut() -> Result<(), Failure>,
    each: &mut dyn FnMut(Word<'_>) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let mut word = Vec::new();
    let mut len = 0usize;
    let mut line = 1u64;
    let mut word_line = 1u64;
    loop {
        before_wait()?;
        let buf = match input.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(Failure::Error(Box::new(Context {
                    doing: "cannot read IDs from stdin".into(),
                    source: Box::new(e),
                })))
            }
        };
        if buf.is_empty() {
            break;
        }
        let consumed = buf.len();
        for &byte in buf {
            if byte.is_ascii_whitespace() {
                if len > 0 {
                    each(Word {
                        text: &word,
                        len,
                        line: word_line,
                    })?;
                    word.clear();
                    len = 0;
                }
                if byte == b'\n' {
                    line += 1;
                }
            } else {
                if len == 0 {
                    word_line = line;
                }
                if word.len() < MAX_WORD {
                    word.push(byte);
                }
                len += 1;
            }
        }
        input.consume(consumed);
    }
    if len > 0 {
        each(Word {
            text: &word,
            len,
            line: word_line,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(input: &[u8]) -> Vec<(String, usize, u64)> {
        let mut found = Vec::new();
        let mut reader = io::BufReader::with_capacity(7, input);
        for_each_word(&mut reader, &mut || Ok(()), &mut |w| {
            found.push((String::from_utf8_lossy(w.text).into_owned(), w.len, w.line));
            Ok(())
        })
        .unwrap();
        found
    }

    #[test]
    fn words_lines_and_lengths() {
        assert_eq!(
            words(b"12 345\n\n  6789012345\t7\n8"),
            [
                ("12".into(), 2, 1),
                ("345".into(), 3, 1),
                ("6789012345".into(), 10, 3),
                ("7".into(), 1, 3),
                ("8".into(), 1, 4)
            ]
        );
        let long = vec![b'9'; 5000];
        let found = words(&long);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].0.len(), found[0].1), (MAX_WORD, 5000));
    }
}
