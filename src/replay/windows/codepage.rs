//! Undoing the console's code page. A console holds characters, not bytes:
//! what the player writes is decoded through the console's output code
//! page (the OEM code page: 437 on a US Windows and under Wine), and the
//! pseudo console sends those characters on as UTF-8. A byte that is not
//! ASCII would reach the log as that code page's reading of it (`\xFF` as
//! U+00A0 under 437), and a kernel name with such bytes would become a
//! name the archive does not hold.
//!
//! Where the code page has one byte per character, each character it
//! decodes maps back to exactly one byte, so the player's own bytes are
//! restored: a UTF-8 name comes back as UTF-8, and bytes that are not UTF-8
//! come back as themselves (which the classifier reads as U+FFFD). A
//! character the code page cannot have produced (the player changed the
//! console's code page) stays as the console sent it; with a multi-byte
//! OEM code page (932, 936, 949, 950) nothing is mapped back.

use std::collections::HashMap;

use windows_sys::Win32::Globalization::{
    GetCPInfo, GetOEMCP, MultiByteToWideChar, CPINFO, MB_ERR_INVALID_CHARS,
};

/// Turns the console's UTF-8 rendering back into the player's bytes.
#[derive(Debug, Default)]
pub struct ConsoleBytes {
    /// Each non-ASCII character of the code page and the byte it decodes
    /// from; `None` when the code page is not one byte per character.
    table: Option<HashMap<char, u8>>,
    /// The start of a UTF-8 character cut off at the end of the last feed.
    carry: Vec<u8>,
}

impl ConsoleBytes {
    /// The mapping of the OEM code page, which a new console uses.
    pub fn oem() -> ConsoleBytes {
        // SAFETY: no arguments.
        Self::for_code_page(unsafe { GetOEMCP() })
    }

    /// The mapping of code page `cp`.
    pub fn for_code_page(cp: u32) -> ConsoleBytes {
        ConsoleBytes {
            table: single_byte_table(cp),
            carry: Vec::new(),
        }
    }

    /// Appends the bytes behind the UTF-8 `text` to `out`; a character cut
    /// off at the end waits for the next call.
    pub fn feed(&mut self, text: &[u8], out: &mut Vec<u8>) {
        let Some(table) = &self.table else {
            out.extend_from_slice(text);
            return;
        };
        let mut input = std::mem::take(&mut self.carry);
        input.extend_from_slice(text);
        let mut rest = input.as_slice();
        while !rest.is_empty() {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    map(table, text, out);
                    break;
                }
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    map(table, std::str::from_utf8(good).unwrap_or_default(), out);
                    match e.error_len() {
                        // Cut off: the rest of the character comes next.
                        None => {
                            self.carry = bad.to_vec();
                            break;
                        }
                        // Not UTF-8 (no console sends that): as it came.
                        Some(n) => {
                            out.extend_from_slice(&bad[..n]);
                            rest = &bad[n..];
                        }
                    }
                }
            }
        }
    }
}

/// Appends `text` with every character of `table` as its byte.
fn map(table: &HashMap<char, u8>, text: &str, out: &mut Vec<u8>) {
    let mut buf = [0u8; 4];
    for c in text.chars() {
        match table.get(&c) {
            Some(b) if !c.is_ascii() => out.push(*b),
            _ => out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes()),
        }
    }
}

/// The character each byte 0x80..=0xFF of `cp` decodes to, when `cp` has
/// one byte per character; a character two bytes decode to is left out.
fn single_byte_table(cp: u32) -> Option<HashMap<char, u8>> {
    let mut info = CPINFO::default();
    // SAFETY: `info` is a valid out-pointer.
    if unsafe { GetCPInfo(cp, &mut info) } == 0 || info.MaxCharSize != 1 {
        return None;
    }
    let mut table = HashMap::new();
    let mut seen = HashMap::new();
    for byte in 0x80u8..=0xFF {
        let mut wide = 0u16;
        // SAFETY: one input byte, room for one UTF-16 unit.
        let n = unsafe {
            MultiByteToWideChar(
                cp,
                MB_ERR_INVALID_CHARS,
                (&raw const byte).cast(),
                1,
                &mut wide,
                1,
            )
        };
        let Some(c) = (n == 1).then(|| char::from_u32(u32::from(wide))).flatten() else {
            continue;
        };
        if c.is_ascii() {
            continue;
        }
        *seen.entry(c).or_insert(0u32) += 1;
        table.insert(c, byte);
    }
    table.retain(|c, _| seen.get(c) == Some(&1));
    Some(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn restore(cp: u32, chunks: &[&[u8]]) -> Vec<u8> {
        let mut bytes = ConsoleBytes::for_code_page(cp);
        let mut out = Vec::new();
        for c in chunks {
            bytes.feed(c, &mut out);
        }
        out
    }

    #[test]
    fn code_page_437_readings_become_the_players_bytes_again() {
        // What the player wrote: a name with bytes that are not UTF-8, and
        // an em dash in UTF-8; what code page 437 makes of them.
        let written: &[u8] = b"name=\"saxpy_\xff\xfe<\xc0\xaf>\" OK \xe2\x80\x94 go\n";
        let rendered = "name=\"saxpy_\u{a0}\u{25a0}<\u{2514}\u{bb}>\" OK \u{393}\u{c7}\u{f6} go\n";
        assert_eq!(restore(437, &[rendered.as_bytes()]), written);
        // A character cut between two reads.
        let (a, b) = rendered.as_bytes().split_at(14);
        assert_eq!(restore(437, &[a, b]), written);
    }

    #[test]
    fn text_the_code_page_cannot_have_made_stays_as_it_came() {
        let text = "[HRR] \u{4e2d} ok\n".as_bytes();
        assert_eq!(restore(437, &[text]), text);
        assert_eq!(
            restore(65001, &["\u{a0}\u{2514}".as_bytes()]),
            "\u{a0}\u{2514}".as_bytes()
        );
    }
}
