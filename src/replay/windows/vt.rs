//! Removing what a pseudo console adds to the player's text. ConPTY is a
//! screen, not a pipe: it renders what the player wrote and sends the
//! rendering as UTF-8 with VT sequences (cursor moves, erases, colours,
//! the window title, mode switches). Only the text and its line ends may
//! reach the log. Sequences can be split across reads, so the filter keeps
//! its state between calls.
//!
//! A line longer than the console is wide fills whole rows, and the
//! console ends each full row with a line end of its own (Wine's does; a
//! Windows one may leave the wrap to the terminal). A line end right after
//! a full row is that wrap, and is removed, so the player's line arrives
//! whole. A line of exactly the console's width is joined with the next
//! one: the screen does not tell the two apart.

/// Where the filter is within an escape sequence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    /// Plain text.
    #[default]
    Text,
    /// After ESC.
    Escape,
    /// In `ESC [` … final byte (CSI).
    Csi,
    /// In `ESC ]` … BEL or `ESC \` (OSC: the title), and the other string
    /// sequences (DCS, SOS, PM, APC) that end the same way.
    String,
    /// ESC inside a string sequence: `\` ends it.
    StringEscape,
    /// After ESC and intermediate bytes (`ESC ( B`): one final byte left.
    Intermediate,
}

/// A VT-sequence filter for one output stream.
#[derive(Debug)]
pub struct VtFilter {
    state: State,
    /// Columns of the console.
    width: usize,
    /// Characters on the current row.
    column: usize,
    /// A CR after a full row, held until the next byte says whether it
    /// begins a wrap (CR LF) or not.
    held_cr: bool,
}

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;

impl VtFilter {
    /// A filter for a console `width` columns wide.
    pub fn new(width: usize) -> VtFilter {
        VtFilter {
            state: State::Text,
            width,
            column: 0,
            held_cr: false,
        }
    }

    /// Appends the text of `input` to `out`, without escape sequences,
    /// without BEL and without the line ends of wrapped rows.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for &b in input {
            self.state = match (self.state, b) {
                (State::Text, ESC) => State::Escape,
                (State::Text, BEL) => State::Text,
                (State::Text, _) => {
                    self.text(b, out);
                    State::Text
                }
                (State::Escape, b'[') => State::Csi,
                (State::Escape, b']' | b'P' | b'X' | b'^' | b'_') => State::String,
                (State::Escape, 0x20..=0x2f) => State::Intermediate,
                (State::Escape, ESC) => State::Escape,
                (State::Escape, _) => State::Text,
                (State::Csi, 0x40..=0x7e) => State::Text,
                (State::Csi, ESC) => State::Escape,
                (State::Csi, _) => State::Csi,
                (State::String, BEL) => State::Text,
                (State::String, ESC) => State::StringEscape,
                (State::String, _) => State::String,
                (State::StringEscape, b'\\') => State::Text,
                (State::StringEscape, _) => State::String,
                (State::Intermediate, 0x20..=0x2f) => State::Intermediate,
                (State::Intermediate, _) => State::Text,
            };
        }
    }

    /// One byte of text: a line end after a full row is dropped, the rest
    /// is passed on and the row's characters counted.
    fn text(&mut self, b: u8, out: &mut Vec<u8>) {
        let full = self.column >= self.width;
        match b {
            b'\r' if full && !self.held_cr => {
                self.held_cr = true;
                return;
            }
            b'\n' if full => {
                // The row wrapped: the line goes on.
                self.held_cr = false;
                self.column = 0;
                return;
            }
            _ => {}
        }
        if std::mem::take(&mut self.held_cr) {
            out.push(b'\r');
            self.column = 0;
        }
        out.push(b);
        match b {
            b'\r' | b'\n' => self.column = 0,
            // A UTF-8 continuation byte is part of the character before.
            _ if b & 0xC0 == 0x80 => {}
            _ => self.column += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip(chunks: &[&[u8]]) -> String {
        strip_at(80, chunks)
    }

    fn strip_at(width: usize, chunks: &[&[u8]]) -> String {
        let mut f = VtFilter::new(width);
        let mut out = Vec::new();
        for c in chunks {
            f.feed(c, &mut out);
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn conpty_rendering_becomes_plain_lines() {
        // What a pseudo console sends for two printed lines: mode
        // switches, the title, a hidden cursor, erases and colours.
        let screen = b"\x1b[?9001h\x1b[?1004h\x1b]0;C:\\hrr\\hrr-playback.exe\x07\x1b[?25l\x1b[H[HRR] Archive : 5 events\x1b[K\r\n\x1b[32m[HRR] PASS\x1b[m\x1b[K\r\n\x1b[?25h";
        assert_eq!(
            strip(&[screen]),
            "[HRR] Archive : 5 events\r\n[HRR] PASS\r\n"
        );
    }

    #[test]
    fn sequences_split_across_reads_are_still_removed() {
        assert_eq!(
            strip(&[
                b"[HRR] Thr\x1b",
                b"[3",
                b"8;5;1mead",
                b"s\x1b]0;ti",
                b"tle\x1b",
                b"\\ ok\x1b(",
                b"B\n"
            ]),
            "[HRR] Threads ok\n"
        );
    }

    #[test]
    fn text_bytes_pass_untouched() {
        let text = "[HRR launch] seq=29 name=\"void k<int, 4>(float*) ü\"\n";
        assert_eq!(strip(&[text.as_bytes()]), text);
    }

    #[test]
    fn a_line_wider_than_the_console_is_joined_again() {
        // Ten columns: a 25-character line fills two rows and part of a
        // third; each full row ends with the console's CR LF.
        let screen: &[&[u8]] = &[
            b"\x1b[?25l0123456789\r",
            b"\nabcdefgh\xc3\xbcj\r\n\x1b[Kxyzab\r\n",
            b"short\r\n",
        ];
        assert_eq!(
            strip_at(10, screen),
            "0123456789abcdefgh\u{fc}jxyzab\r\nshort\r\n"
        );
        // A bare CR after a full row is kept: it is no wrap.
        assert_eq!(strip_at(3, &[b"abc\rd\n"]), "abc\rd\n");
    }
}
