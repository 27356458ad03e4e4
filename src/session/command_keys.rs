//! Command keys: whether a command is one simple command, and the word prefixes a user may
//! grant it by (a prefix grant covers only simple commands).

/// Characters that make a command more than one simple command, or code: separators,
/// redirections, expansions, quoting escapes, brace expansion, globs, comments, history.
/// Refused anywhere, quoted or not (conservative).
const NOT_SIMPLE: &[char] = &[
    ';', '&', '|', '<', '>', '(', ')', '$', '`', '\\', '\n', '\r', '{', '}', ',', '*', '?', '[',
    ']', '#', '!',
];

/// The words of `command` if it is one simple command: plain words, single- or
/// double-quoted words (no escapes needed), separated by spaces/tabs. `None` for anything a
/// shell would treat as more than one command or as code (see [`NOT_SIMPLE`]), control
/// characters, a `~` that could be expanded, a first word that could be an environment
/// assignment (`NAME=value`), an unterminated quote and an empty command. When in doubt,
/// `None`: the command then cannot match a prefix grant and the user is asked again.
pub(crate) fn simple_argv(command: &str) -> Option<Vec<String>> {
    if command
        .chars()
        .any(|c| NOT_SIMPLE.contains(&c) || (c.is_control() && c != '\t'))
    {
        return None;
    }
    let mut words: Vec<String> = vec![];
    let mut chars = command.chars().peekable();
    loop {
        while matches!(chars.peek(), Some(' ' | '\t')) {
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        let mut word = String::new();
        while let Some(c) = chars.next() {
            match c {
                ' ' | '\t' => break,
                '\'' | '"' => loop {
                    match chars.next() {
                        None => return None,
                        Some(q) if q == c => break,
                        Some(other) => word.push(other),
                    }
                },
                // Tilde expansion: at a word's start, and after `=` or `:` (assignments).
                '~' if word.is_empty() || word.ends_with(['=', ':']) => return None,
                _ => word.push(c),
            }
        }
        if words.is_empty() && word.contains('=') {
            return None;
        }
        words.push(word);
    }
    if words.is_empty() {
        return None;
    }
    // A second opinion: a POSIX-style split must see the same words.
    if shlex::split(command).as_ref() != Some(&words) {
        return None;
    }
    Some(words)
}

/// The prefixes a user may pick for a prefix grant of `command`: its words' prefixes,
/// longest (all words) first down to the first word alone; empty if not simple.
pub(crate) fn prefix_choices(command: &str) -> Vec<Vec<String>> {
    let Some(words) = simple_argv(command) else {
        return vec![];
    };
    (1..=words.len())
        .rev()
        .map(|n| words[..n].to_vec())
        .collect()
}

#[cfg(test)]
#[path = "command_keys_tests.rs"]
mod tests;
