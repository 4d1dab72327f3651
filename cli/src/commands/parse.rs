//! `uidgen parse`: IDs taken apart, one JSON object a line, from the arguments or stdin,
//! in any form `next` writes.

use crate::args::{self, LayoutArgs};
use crate::output::{report, Failure, Lines};
use crate::words;
use crate::{FAILURE, SUCCESS};
use std::io::{BufRead, Write};
use uidgen::{BitsAllocator, IdFormat, InvalidUidReason, UidError, UidParts};

pub(super) fn run(
    uids: &[String],
    format: Option<IdFormat>,
    layout: &LayoutArgs,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<u8, Failure> {
    // Old IDs stay readable after their layout has run out.
    let bits = layout.builder()?.build_unchecked_time()?;
    let mut out = Lines::new(stdout);
    let mut failed = false;
    // Decodes one ID, or reports why it is none; `line` is its stdin line, if from stdin.
    let mut decode = |out: &mut Lines<'_>, word: &str, len: usize, line: Option<u64>| {
        let place = line.map_or(String::new(), |line| format!("stdin line {line}: "));
        let error = if len > words::MAX_WORD {
            format!(
                "invalid UID {}: {len} bytes long, so not a decimal integer in 0..={}",
                args::shorten(word),
                i64::MAX
            )
        } else {
            match read(&bits, word, format) {
                Ok(parts) => return out.line(parts),
                Err(message) => message,
            }
        };
        // What came before it first, so that the two streams read in order.
        out.flush()?;
        report(stderr, &format!("uidgen: {place}{error}"));
        failed = true;
        Ok(())
    };
    let result = (|| {
        // No IDs: read them from stdin, as a lone - does (once: a second finds its end).
        let from_stdin = uids.is_empty();
        let mut stdin_read = false;
        for uid in uids
            .iter()
            .map(String::as_str)
            .chain(from_stdin.then_some("-"))
        {
            if uid != "-" {
                decode(&mut out, uid, 0, None)?;
            } else if !std::mem::replace(&mut stdin_read, true) {
                let out = std::cell::RefCell::new(&mut out);
                words::for_each_word(stdin, &mut || out.borrow_mut().flush(), &mut |word| {
                    let text = String::from_utf8_lossy(word.text);
                    decode(&mut out.borrow_mut(), &text, word.len, Some(word.line))
                })?;
            }
        }
        out.flush()
    })();
    match result {
        // A closed stdout ends the command with the status earned so far.
        Ok(()) | Err(Failure::ClosedPipe) => Ok(if failed { FAILURE } else { SUCCESS }),
        Err(other) => Err(other),
    }
}

/// One ID taken apart: read in `format`, or else in the form it looks like
/// (`IdFormat::detect`); or the words saying why it is no ID.
fn read(bits: &BitsAllocator, word: &str, format: Option<IdFormat>) -> Result<UidParts, String> {
    let text = word.trim();
    let invalid = |why: uidgen::DecodeError| format!("invalid UID {}: {why}", args::shorten(word));
    match format.or_else(|| IdFormat::detect(text)) {
        // Decimal reads as it always has, with the library's words for it.
        Some(IdFormat::Decimal) => bits.parse_str(word).map_err(|err| err.to_string()),
        Some(form) => {
            let uid = form.decode(text).map_err(invalid)?;
            bits.parse(uid).map_err(|err| err.to_string())
        }
        // No form fits: a sign or nothing at all is said as before; anything else gets
        // what each form looks like.
        None => match bits.parse_str(word) {
            Err(UidError::InvalidUid {
                reason: InvalidUidReason::NotDecimal,
                ..
            }) => Err(invalid(uidgen::DecodeError::Unrecognized {
                len: text.chars().count(),
            })),
            other => other.map_err(|err| err.to_string()),
        },
    }
}
