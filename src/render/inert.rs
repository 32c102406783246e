//! Making archive-controlled text inert in markdown.
//!
//! Kernel names, paths, API names and fault reasons come from the archive or
//! the replay log, which a customer controls. Rendered into the chat
//! markdown they must stay text: no table breakouts (`|`), no code-span
//! escapes (backticks), no HTML (`<`), no new blocks (newlines), no terminal
//! control sequences (ANSI escapes) and no bidirectional-override tricks.

/// Control characters become visible replacements; ANSI escape sequences are
/// dropped; line breaks and tabs become spaces.
pub fn sanitize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => skip_escape(&mut chars),
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => out.push('\u{fffd}'),
            // bidirectional embeddings, overrides and isolates
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Skip the rest of an escape sequence after ESC: CSI (`ESC [ … final`),
/// OSC (`ESC ] … BEL` or `ESC ] … ESC \`), or a single following character.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => {
            for c in chars.by_ref() {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    break;
                }
            }
        }
        Some(']') => {
            while let Some(c) = chars.next() {
                if c == '\u{7}' {
                    break;
                }
                if c == '\u{1b}' {
                    chars.next_if_eq(&'\\');
                    break;
                }
            }
        }
        _ => {}
    }
}

/// Plain markdown text: every character markdown could act on here is
/// backslash-escaped, and nothing else, so paths and symbol names read as
/// written in the raw text too (a command in a next step can be copied).
pub fn text(s: &str) -> String {
    let clean: Vec<char> = sanitize(s).chars().collect();
    let mut out = String::with_capacity(clean.len() + 8);
    for (i, &c) in clean.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| clean[j]);
        if acts(c, prev, clean.get(i + 1).copied()) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Whether `c`, between `prev` and `next`, could act as markdown. An `_`
/// between two letters or digits can neither open nor close emphasis
/// (CommonMark's flanking rules), and a `\` escapes only the ASCII
/// punctuation after it (or what a renderer puts after the text), so those
/// stay as they are.
fn acts(c: char, prev: Option<char>, next: Option<char>) -> bool {
    match c {
        '_' => {
            !(prev.is_some_and(char::is_alphanumeric) && next.is_some_and(char::is_alphanumeric))
        }
        '\\' => next.is_none_or(|n| n.is_ascii_punctuation()),
        '`' | '*' | '[' | ']' | '<' | '>' | '|' | '~' | '&' | '#' | '!' => true,
        _ => false,
    }
}

/// An inline code span that holds `s` verbatim: the backtick fence is longer
/// than any backtick run inside, padded when `s` starts or ends with one.
/// `in_table` escapes `|`, which GFM splits cells on even inside code spans.
pub fn code(s: &str, in_table: bool) -> String {
    let mut clean = sanitize(s);
    if in_table {
        clean = clean.replace('|', "\\|");
    }
    let mut longest = 0;
    let mut run = 0;
    for c in clean.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    if clean.is_empty() {
        return "` `".into();
    }
    let pad = if clean.starts_with('`') || clean.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{clean}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_and_controls_are_removed() {
        assert_eq!(sanitize("a\u{1b}[31mred\u{1b}[0m"), "ared");
        assert_eq!(sanitize("x\u{1b}]0;title\u{7}y"), "xy");
        assert_eq!(sanitize("x\u{1b}]8;;http://e\u{1b}\\y"), "xy");
        assert_eq!(sanitize("a\nb\r\tc"), "a b  c");
        assert_eq!(sanitize("a\u{0}b\u{7f}c"), "a\u{fffd}b\u{fffd}c");
        assert_eq!(sanitize("ab\u{202e}cd"), "ab\u{fffd}cd");
    }

    #[test]
    fn text_escapes_markdown() {
        assert_eq!(text("a|b"), "a\\|b");
        assert_eq!(text("<img src=x>"), "\\<img src=x\\>");
        assert_eq!(text("*_`[x](y)"), "\\*\\_\\`\\[x\\](y)");
        assert_eq!(text("line\n# heading"), "line \\# heading");
    }

    #[test]
    fn names_and_paths_stay_as_written_where_markdown_cannot_act() {
        assert_eq!(text("/data/my_cap.hrr/pid-4"), "/data/my_cap.hrr/pid-4");
        assert_eq!(text("crash_oob"), "crash_oob");
        assert_eq!(text(r"C:\caps\x.hrr"), r"C:\caps\x.hrr");
        // Emphasis can open or close at a word edge, and a backslash before
        // punctuation (or at the end, before what follows) is an escape.
        assert_eq!(text("_a_ b__c"), r"\_a\_ b\_\_c");
        assert_eq!(text(r"a\*b"), r"a\\\*b");
        assert_eq!(text(r"dir\"), r"dir\\");
        assert_eq!(text(r"\\x"), r"\\\x");
    }

    /// What a CommonMark reader makes of one line of markdown: its text,
    /// or the first thing in it that is not plain text.
    fn read_back(md: &str) -> Result<String, String> {
        use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
        let mut out = String::new();
        for event in Parser::new_ext(md, Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES) {
            match event {
                Event::Start(Tag::Paragraph) | Event::End(TagEnd::Paragraph) => {}
                Event::Text(t) => out.push_str(&t),
                other => return Err(format!("{other:?} in {md:?}")),
            }
        }
        Ok(out)
    }

    proptest::proptest! {
        /// Escaped text between words reads back as exactly itself: no
        /// emphasis, code, link, HTML or entity, whatever its characters.
        #[test]
        fn escaped_text_reads_back_as_itself(s in r"[ab1 _*\\`\[\]()<>!&#~|:/.;=-]{0,24}") {
            let md = format!("x {} x", text(&s));
            proptest::prop_assert_eq!(read_back(&md), Ok(format!("x {s} x")));
        }
    }

    #[test]
    fn code_spans_hold_backticks_and_pipes() {
        assert_eq!(code("k", false), "`k`");
        assert_eq!(code("a`b", false), "``a`b``");
        assert_eq!(code("`x", false), "`` `x ``");
        assert_eq!(code("a|b", true), "`a\\|b`");
        assert_eq!(code("a|b", false), "`a|b`");
        assert_eq!(code("", false), "` `");
        assert_eq!(code("<script>", false), "`<script>`");
    }
}
