//! The one escaping of text that reaches the user's eyes from the disk, a config file or the
//! model: dialog titles and options, notices, notes, `/sandbox`, the CLI's explanations.
//!
//! A name is data, never layout: a carriage return or an escape sequence would let it erase
//! or redraw a line of the dialog ("make ~ writable" gone), a line separator would start a
//! line of its own, a bidi override would show it backwards, tag and zero-width characters
//! would make two different names look alike. So every such character is shown as a
//! visible escape (`\x1b`, `\u{202e}`), a byte that is not UTF-8 as `\xNN`, and a long name
//! is shortened in the middle: its end, what a path names, stays. Pure.
//!
//! Escape untrusted parts where they are put into a sentence (`text`, `name`, `path`), so
//! the sentence's own line breaks survive; `lines` is the last guard over a whole message.

use std::path::Path;

/// A name longer than this (in shown characters, an escape counting as one) is shortened.
pub(crate) const MAX_NAME: usize = 160;
/// Of a shortened name, how much of its start is kept; the rest of `MAX_NAME` is its end.
const KEPT_START: usize = 50;

/// Characters shown as escapes: controls (C0, DEL, C1), the line and paragraph separators,
/// and the invisible ones that reorder, hide or disguise text: bidi controls, every format
/// character (Cf: zero-width, tags, invisible operators, interlinear annotations), variation
/// selectors and the blank fillers that draw nothing.
pub(crate) fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{2028}' | '\u{2029}'
            // Bidi marks, embeddings, overrides and isolates.
            | '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
            // Zero-width and invisible format characters (Cf), and joiners.
            | '\u{00ad}' | '\u{034f}' | '\u{0600}'..='\u{0605}' | '\u{06dd}' | '\u{070f}'
            | '\u{0890}' | '\u{0891}' | '\u{08e2}' | '\u{180b}'..='\u{180f}' | '\u{200b}'..='\u{200d}'
            | '\u{2060}'..='\u{2065}' | '\u{206a}'..='\u{206f}' | '\u{feff}' | '\u{fff9}'..='\u{fffb}'
            | '\u{110bd}' | '\u{110cd}' | '\u{13430}'..='\u{1343f}' | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            // Fillers that take a place and draw nothing, and blanks wider or narrower than a
            // space (they pad a spoofed line into place).
            | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}' | '\u{3164}' | '\u{ffa0}'
            | '\u{2000}'..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{2800}' | '\u{3000}'
            // Variation selectors (text can be smuggled in them) and the tag block.
            | '\u{fe00}'..='\u{fe0f}' | '\u{e0100}'..='\u{e01ef}' | '\u{e0000}'..='\u{e007f}')
}

/// How one character is shown: itself, or its escape.
fn push_char(out: &mut Vec<String>, c: char) {
    if !is_hidden(c) {
        out.push(c.to_string());
    } else if (c as u32) < 0x100 {
        out.push(format!("\\x{:02x}", c as u32));
    } else {
        out.push(format!("\\u{{{:x}}}", c as u32));
    }
}

/// The shown units of `bytes`: a character or the escape standing for one (or for a byte
/// that is not UTF-8), so that shortening never cuts an escape in two.
fn units(bytes: &[u8], keep_newlines: bool) -> Vec<String> {
    let mut out = Vec::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if keep_newlines && c == '\n' {
                out.push("\n".into());
            } else {
                push_char(&mut out, c);
            }
        }
        for b in chunk.invalid() {
            out.push(format!("\\x{b:02x}"));
        }
    }
    out
}

/// `units` joined, shortened in the middle to `max` units (its start and its end kept).
fn joined(units: Vec<String>, max: Option<usize>) -> String {
    match max {
        Some(max) if units.len() > max => {
            let start = KEPT_START.min(max / 3);
            let end = max - start - 1;
            let mut s: String = units[..start].concat();
            s.push('…');
            s.push_str(&units[units.len() - end..].concat());
            s
        }
        _ => units.concat(),
    }
}

/// `s` needs nothing done: no hidden character (but a kept newline), and short enough.
/// The common case, and every message passes here: it is answered without a copy per
/// character.
fn plain(s: &str, keep_newlines: bool, max: Option<usize>) -> bool {
    let fits = max.is_none_or(|m| s.len() <= m || s.chars().count() <= m);
    fits && s
        .chars()
        .all(|c| !is_hidden(c) || (keep_newlines && c == '\n'))
}

/// Text from outside (a command, a rule, a value) as one line: every hidden character,
/// newlines and tabs included, escaped; nothing shortened.
pub(crate) fn text(s: &str) -> String {
    if plain(s, false, None) {
        return s.to_string();
    }
    joined(units(s.as_bytes(), false), None)
}

/// A whole message whose own line breaks are meant: as `text`, but `\n` stays.
pub(crate) fn lines(s: &str) -> String {
    if plain(s, true, None) {
        return s.to_string();
    }
    joined(units(s.as_bytes(), true), None)
}

/// A name (a file, a host, a config entry) as one line, shortened in the middle when long.
pub(crate) fn name(s: &str) -> String {
    if plain(s, false, Some(MAX_NAME)) {
        return s.to_string();
    }
    joined(units(s.as_bytes(), false), Some(MAX_NAME))
}

/// A path as `name` shows it, from its bytes: what is not UTF-8 is shown byte by byte.
pub(crate) fn path(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    if let Some(s) = p.to_str().filter(|s| plain(s, false, Some(MAX_NAME))) {
        return s.to_string();
    }
    joined(units(p.as_os_str().as_bytes(), false), Some(MAX_NAME))
}

/// A name in double quotes, as a config entry is quoted in a sentence.
pub(crate) fn quoted(s: &str) -> String {
    format!("\"{}\"", name(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn each_hidden_class_becomes_a_visible_escape() {
        for (raw, shown) in [
            ("a\u{1b}[2Kb", "a\\x1b[2Kb"),
            ("a\rb", "a\\x0db"),
            ("a\nb\tc", "a\\x0ab\\x09c"),
            ("\u{0}\u{7f}", "\\x00\\x7f"),
            ("a\u{85}b\u{9b}c", "a\\x85b\\x9bc"),
            ("a\u{2028}b\u{2029}", "a\\u{2028}b\\u{2029}"),
            ("txt.\u{202e}exe", "txt.\\u{202e}exe"),
            (
                "\u{200e}\u{200f}\u{202a}\u{2066}\u{2069}\u{61c}",
                "\\u{200e}\\u{200f}\\u{202a}\\u{2066}\\u{2069}\\u{61c}",
            ),
            (
                "\u{e0041}\u{e007f}\u{e0000}",
                "\\u{e0041}\\u{e007f}\\u{e0000}",
            ),
            (".env\u{200b}", ".env\\u{200b}"),
            ("a\u{feff}\u{2060}\u{ad}b", "a\\u{feff}\\u{2060}\\xadb"),
            ("\u{3164}\u{fe0f}\u{e0100}", "\\u{3164}\\u{fe0f}\\u{e0100}"),
            (
                "a\u{2800}\u{3000}\u{2003}\u{202f}b",
                "a\\u{2800}\\u{3000}\\u{2003}\\u{202f}b",
            ),
        ] {
            assert_eq!(text(raw), shown, "{raw:?}");
            assert!(text(raw).chars().all(|c| !is_hidden(c)), "{raw:?}");
        }
    }

    #[test]
    fn ordinary_paths_and_utf8_names_are_unchanged() {
        for s in [
            "/home/ana/projects/my app/src/main.rs",
            "~/.config/Code/User",
            "/srv/données/résumé — 2024 (final).txt",
            "/data/日本語/ファイル.md",
            "api.github.com",
            "C:\\odd but visible",
            "emoji 🎉 ok",
        ] {
            assert_eq!(text(s), s);
            assert_eq!(name(s), s);
            assert_eq!(path(Path::new(s)), s);
        }
        assert_eq!(quoted("~/x"), "\"~/x\"");
    }

    #[test]
    fn a_message_keeps_its_own_line_breaks_and_nothing_else() {
        assert_eq!(
            lines("one\ntwo\r\x1b[2K\u{2028}"),
            "one\ntwo\\x0d\\x1b[2K\\u{2028}"
        );
        assert_eq!(text("one\ntwo"), "one\\x0atwo");
    }

    #[test]
    fn long_names_are_shortened_in_the_middle_and_keep_their_end() {
        let long = format!("/start/{}/the-end.txt", "m".repeat(400));
        let s = name(&long);
        assert_eq!(s.chars().count(), MAX_NAME);
        assert!(s.starts_with("/start/mmm"), "{s}");
        assert!(s.ends_with("mmm/the-end.txt"), "{s}");
        assert!(s.contains('…'));
        // An escape is one unit: never cut in two.
        let s = name(&"\u{1b}".repeat(400));
        assert!(s.starts_with("\\x1b") && s.ends_with("\\x1b"), "{s}");
        assert_eq!(s.matches("\\x1b").count(), MAX_NAME - 1);
        // Text is never shortened: a command is shown whole.
        assert_eq!(text(&long), long);
        assert_eq!(name(&"x".repeat(MAX_NAME)), "x".repeat(MAX_NAME));
    }

    #[test]
    fn bytes_that_are_not_utf8_are_shown_one_by_one() {
        let p = Path::new(std::ffi::OsStr::from_bytes(b"/p/a\xff\xfeb\xe2\x80\xaec"));
        assert_eq!(path(p), "/p/a\\xff\\xfeb\\u{202e}c");
    }
}
