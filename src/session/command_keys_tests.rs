use super::*;

fn words(v: &[&str]) -> Option<Vec<String>> {
    Some(v.iter().map(|w| w.to_string()).collect())
}

#[test]
fn simple_argv_cases() {
    assert_eq!(simple_argv("git status"), words(&["git", "status"]));
    assert_eq!(simple_argv("  git\tstatus  "), words(&["git", "status"]));
    assert_eq!(
        simple_argv(r#"'git' "status" 'it"s' "it's" a'b'"c""#),
        words(&["git", "status", "it\"s", "it's", "abc"])
    );
    assert_eq!(simple_argv("echo ''"), words(&["echo", ""]));
    // A quoted tilde is literal in every shell.
    assert_eq!(simple_argv("ls '~' \"~\""), words(&["ls", "~", "~"]));
    assert_eq!(
        simple_argv("git log HEAD~1 --x=y"),
        words(&["git", "log", "HEAD~1", "--x=y"])
    );
    for bad in [
        "",
        "   ",
        "git 'status",
        "git \"status",
        "~/bin/x",
        "ls ~",
        "ls --dir=~/x",
        "ls a:~/x",
        "FOO=1 git",
        "'FOO=1' git",
        "ls *.rs",
        "ls a?",
        "ls [ab]",
        "echo {a,b}",
        "echo a,b",
        "echo !x",
        "echo \"$HOME\"",
        "echo 'a;b'",
        "echo \u{0}",
        "echo \u{b}x",
    ] {
        assert_eq!(simple_argv(bad), None, "{bad:?}");
    }
}

#[test]
fn prefix_choices_longest_first() {
    assert_eq!(
        prefix_choices("git status -s"),
        vec![
            vec!["git".to_string(), "status".into(), "-s".into()],
            vec!["git".to_string(), "status".into()],
            vec!["git".to_string()],
        ]
    );
    assert!(prefix_choices("git status; id").is_empty());
    assert!(prefix_choices("").is_empty());
}
