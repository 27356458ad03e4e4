use super::*;

#[test]
fn error_lines_name_their_paths() {
    assert_eq!(
        paths_in_error_line(
            "error: could not write config file .git/config: Device or resource busy"
        ),
        [".git/config"]
    );
    assert_eq!(
        paths_in_error_line(
            "/tmp/pi-bash-1.sh: line 1: githooks/pre-commit: Read-only file system"
        ),
        ["githooks/pre-commit"]
    );
    assert!(
        paths_in_error_line("touch: cannot touch 'a b': Read-only file system")
            .contains(&"a b".to_string())
    );
    assert!(
        paths_in_error_line("OSError: [Errno 30] Read-only file system: '/w/x'")
            .contains(&"/w/x".to_string())
    );
}
