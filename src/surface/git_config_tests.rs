use super::*;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn name() -> &'static Path {
    Path::new("/r/.git/config")
}

fn keys(text: &str) -> Vec<String> {
    unsafe_keys(text.as_bytes(), name()).unwrap()
}

#[test]
fn fresh_git_init_config_is_safe_and_command_keys_are_not() {
    let fresh = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n";
    assert_eq!(keys(fresh), Vec::<String>::new());
    let remote = "[remote \"origin\"]\n\turl = https://x\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n";
    assert_eq!(keys(remote), Vec::<String>::new());
    assert_eq!(keys("[core]\n  hooksPath = /x\n"), ["core.hookspath"]);
    assert_eq!(keys("[core] fsmonitor = evil\n"), ["core.fsmonitor"]);
    assert_eq!(keys("[alias]\n st = !sh -c x\n"), ["alias.st"]);
    assert_eq!(keys("[include]\n path = ../x\n"), ["include.path"]);
    assert_eq!(keys("[filter \"lfs\"]\n clean = x\n"), ["filter.*.clean"]);
    // the old syntax: the subsection is lower-cased, and may hold dots
    assert_eq!(keys("[remote.Or.igin]\n url = x\n"), Vec::<String>::new());
    // a key named once however often it is set
    assert_eq!(keys("[core]\npager=a\npager=b\n"), ["core.pager"]);
}

#[test]
fn what_a_parser_of_our_own_read_as_harmless_is_read_as_git_reads_it() {
    // the escape: a quoted subsection holding `]`, then a second header on the same line.
    // Read up to the first `]`, this was `remote.*.url`; git reads core.fsmonitor.
    assert_eq!(
        keys("[remote \"a]url=x\"] [core] fsmonitor = touch /tmp/pwned\n"),
        ["core.fsmonitor"]
    );
    assert_eq!(
        keys("[core \"x]\"][core]fsmonitor = evil\n"),
        ["core.fsmonitor"]
    );
    // a backslash-continued value hiding a line that looks like a header
    assert_eq!(
        keys("[core]\n\tbare = true\\\n[remote \"o\"] url = x\n"),
        Vec::<String>::new()
    );
    assert_eq!(
        keys("[remote \"o\"]\n\turl = \"x\\\n\"\n[core]\n\tpager = x\n"),
        ["core.pager"]
    );
    // CRLF, a BOM, a comment character inside quotes
    assert_eq!(
        keys("\u{feff}[core]\r\n\teditor = \"vi;x\" # c\r\n"),
        ["core.editor"]
    );
}

#[test]
fn a_config_git_cannot_read_is_unsafe_and_the_reason_names_the_file() {
    for bad in [
        "[core\n",
        "[core]\n\tbare = \"open\n",
        "[core]\0bare = 1\n",
        "[core]\n\t1x = 1\n",
    ] {
        let e = unsafe_keys(bad.as_bytes(), name()).unwrap_err();
        assert!(e.contains("git cannot read it as a config"), "{e}");
        assert!(e.contains("/r/.git/config"), "{e}");
    }
}

#[test]
fn only_entries_the_command_added_are_judged() {
    let before = b"[core]\n\thooksPath = mine\n\tbare = false\n";
    let unchanged_but_reformatted = b"[core]\n  bare=false\n[core]\n  hookspath = mine\n";
    let added = |after: &[u8]| added_unsafe_keys(Some(before), after, name()).unwrap();
    assert_eq!(added(unchanged_but_reformatted), Vec::<String>::new());
    assert_eq!(
        added(b"[core]\n\thooksPath = mine\n\tworktree = ../x\n"),
        Vec::<String>::new()
    );
    // a new value of the same key is an entry the user did not write
    assert_eq!(added(b"[core]\n\thooksPath = theirs\n"), ["core.hookspath"]);
    assert_eq!(
        added(b"[core]\n\thooksPath = mine\n\tfsmonitor\n"),
        ["core.fsmonitor"]
    );
    // a before git cannot read holds nothing
    let broken = added_unsafe_keys(Some(b"[core"), before, name()).unwrap();
    assert_eq!(broken, ["core.hookspath"]);
}

#[test]
fn patterns_take_the_subsection_between_the_first_and_last_dot() {
    assert_eq!(pattern(b"core.bare"), "core.bare");
    assert_eq!(pattern(b"remote.a.b.url"), "remote.*.url");
    assert_eq!(pattern(b"remote..url"), "remote.*.url");
    assert_eq!(pattern(b"core.x.fsmonitor"), "core.*.fsmonitor");
    assert_eq!(pattern(b"x"), "x");
    let listed = parse_list(b"core.bare\ntrue\0core.x\0a.b\n\nc\0");
    assert_eq!(listed[1].value, None);
    assert_eq!(listed[2].value.as_deref(), Some(&b"\nc"[..]));
}

// ---- the differential fuzz against git itself ----------------------------------------

/// xorshift64*: a fixed seed gives the same configs on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T: ?Sized>(&mut self, xs: &[&'a T]) -> &'a T {
        xs[self.below(xs.len())]
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// Sections without a subsection, and the names the safe list allows in them.
const PLAIN: &[(&str, &[&str])] = &[
    (
        "core",
        &[
            "repositoryformatversion",
            "fileMode",
            "bare",
            "logallrefupdates",
            "ignorecase",
            "symlinks",
            "autocrlf",
            "worktree",
            "sparseCheckout",
        ],
    ),
    ("user", &["name", "email"]),
    ("init", &["defaultBranch"]),
    ("extensions", &["objectformat", "worktreeConfig"]),
    ("index", &["sparse"]),
];
/// Sections with a subsection, and their safe names.
const SUBSECTIONED: &[(&str, &[&str])] = &[
    ("remote", &["url", "fetch", "pushurl", "tagopt", "prune"]),
    ("branch", &["remote", "merge", "rebase"]),
    ("submodule", &["url", "active", "branch"]),
];
/// Names that run commands or redirect git, wherever they are written.
const UNSAFE_NAMES: &[&str] = &[
    "fsmonitor",
    "hooksPath",
    "pager",
    "editor",
    "sshCommand",
    "path",
    "clean",
    "smudge",
    "st",
    "textconv",
    "askpass",
    "gitProxy",
    "uploadpack",
    "receivepack",
    "proxy",
];
const UNSAFE_HEADERS: &[&str] = &[
    "[alias]",
    "[include]",
    "[includeIf \"gitdir:/x/\"]",
    "[filter \"lfs\"]",
    "[diff \"x\"]",
    "[core \"x\"]",
    "[core.x]",
    "[credential]",
    "[sequence]",
    "[url \"x\"]",
    "[CoRe]",
];
const SUBSECTION_NAMES: &[&str] = &[
    "origin",
    "a]b",
    "a]url=x",
    "x\\\"y",
    "a\\\\b",
    "with space",
    "",
    "a.b",
    "\u{1}\u{7f}",
    "]\\\"",
    "#;",
    "main",
    "[core]",
];
const VALUES: &[&str] = &[
    "true",
    "0",
    "https://x/y.git",
    "+refs/heads/*:refs/remotes/origin/*",
    "\"a b\"",
    "\"a;b#c\"",
    "\"x\\\"y\"",
    "\"x\\\\y\"",
    "\"\\t\\n\\b\"",
    "a\\tb",
    "a\\\\b",
    "",
    "x ; comment",
    "x # comment",
    "\"x\\\n y\"",
    "x\\\n y",
    "\"[core]\"",
    "\"fsmonitor = x\"",
];
/// What only a hostile or broken config holds; git may refuse it.
const ODD_VALUES: &[&str] = &[
    "a\\x",
    "\"open",
    "a\0b",
    "a\rb",
    "\"a\nb\"",
    "\u{ff}\u{1}",
    "x\\",
    "\"x\" y \"",
    "]\n[core]\nfsmonitor = x",
    "x\\\n[core] fsmonitor = y",
];

fn header(rng: &mut Rng, safe: bool) -> (String, &'static [&'static str]) {
    let subsectioned = rng.chance(50);
    if !safe && rng.chance(25) {
        return (rng.pick(UNSAFE_HEADERS).to_string(), UNSAFE_NAMES);
    }
    if !subsectioned {
        let (s, names) = PLAIN[rng.below(PLAIN.len())];
        let s = if rng.chance(20) {
            s.to_uppercase()
        } else {
            s.to_string()
        };
        return (format!("[{s}]"), names);
    }
    let (s, names) = SUBSECTIONED[rng.below(SUBSECTIONED.len())];
    let sub = rng.pick(SUBSECTION_NAMES);
    // the deprecated `[section.subsection]` form takes key characters and dots only
    if rng.chance(15)
        && sub.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
        && !sub.is_empty()
    {
        return (format!("[{s}.{sub}]"), names);
    }
    let long;
    let sub = if rng.chance(3) {
        long = "s".repeat(3000);
        long.as_str()
    } else {
        sub
    };
    (format!("[{s} \"{sub}\"]"), names)
}

/// One generated config: `safe` ones use only the safe list's keys and syntax git accepts.
fn config(rng: &mut Rng, safe: bool) -> Vec<u8> {
    let eol = if rng.chance(20) { "\r\n" } else { "\n" };
    let mut out = String::new();
    if rng.chance(10) {
        out.push('\u{feff}');
    }
    let mut names: &[&str] = &[];
    for _ in 0..1 + rng.below(6) {
        match rng.below(10) {
            0 => out.push_str(&format!("{} [x] = y \"{eol}", rng.pick(&["#", ";"]))),
            1 if !names.is_empty() => {
                // several headers on one line, a key after them
                let (h1, _) = header(rng, safe);
                let (h2, n2) = header(rng, safe);
                let key = rng.pick(n2);
                out.push_str(&format!(
                    "{h1}{}{h2} {key} = {}{eol}",
                    rng.pick(&["", " ", "\t"]),
                    rng.pick(VALUES)
                ));
                names = n2;
            }
            2..=3 => {
                let (h, n) = header(rng, safe);
                out.push_str(&h);
                out.push_str(rng.pick(&["", " ", "\t"]));
                names = n;
                if rng.chance(40) {
                    let key = rng.pick(n);
                    out.push_str(&format!("{key}={}", rng.pick(VALUES)));
                }
                out.push_str(eol);
            }
            _ if names.is_empty() => {
                let (h, n) = header(rng, safe);
                out.push_str(&format!("{h}{eol}"));
                names = n;
            }
            _ => {
                let name = if !safe && rng.chance(25) {
                    rng.pick(UNSAFE_NAMES)
                } else {
                    rng.pick(names)
                };
                let indent = rng.pick(&["", "\t", "  "]);
                let value = if !safe && rng.chance(25) {
                    rng.pick(ODD_VALUES).to_string()
                } else if rng.chance(3) {
                    "v".repeat(20_000)
                } else {
                    rng.pick(VALUES).to_string()
                };
                match rng.below(4) {
                    0 => out.push_str(&format!("{indent}{name}{eol}")),
                    1 => out.push_str(&format!("{indent}{name}={value}{eol}")),
                    _ => out.push_str(&format!("{indent}{name} = {value}{eol}")),
                }
            }
        }
    }
    let mut bytes = out.into_bytes();
    if !safe && rng.chance(20) {
        // an odd byte anywhere
        let at = rng.below(bytes.len() + 1);
        bytes.insert(
            at,
            *rng.pick(&[&0u8, &0xff, &b'\r', &b'"', &b']', &b'\\', &b'\n']),
        );
    }
    bytes
}

/// Every git on this machine: the system one the judgement asks, and any other on PATH
/// (the user's shell may run another version than the system's).
fn gits() -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = crate::process::SYSTEM_DIRS.iter().map(PathBuf::from);
    for dir in dirs.chain(std::env::split_paths(&path)) {
        let git = dir.join("git");
        let Ok(real) = std::fs::canonicalize(&git) else {
            continue;
        };
        if std::fs::metadata(&real).is_ok_and(|m| m.is_file()) && !found.contains(&real) {
            found.push(real);
        }
    }
    found
}

/// `git <args>` as the user would run it on a file (not through the judgement's runner).
fn git_out(git: &Path, args: &[&str], file: &Path) -> Option<Vec<u8>> {
    let out = Command::new(git)
        .args(["config", "--file"])
        .arg(file)
        .args(args)
        .env_clear()
        .env("HOME", "/nonexistent")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .unwrap();
    match out.status.code() {
        Some(0) => Some(out.stdout),
        Some(1) if out.stdout.is_empty() => Some(vec![]),
        _ => None,
    }
}

/// `SAFE_GIT_KEYS` as one regex for `git config --get-regexp`: git matches it against its
/// own keys, independently of `pattern`.
fn safe_regex() -> String {
    let alts: Vec<String> = SAFE_GIT_KEYS
        .iter()
        .map(|k| k.replace('.', "\\.").replace('*', ".*"))
        .collect();
    format!("^({})$", alts.join("|"))
}

const COMMAND_KEYS: &str = r"^(core\.(fsmonitor|hookspath|pager|editor|sshcommand|askpass|gitproxy)|alias\..*|include\.path|includeif\..*\.path|filter\..*\.(clean|smudge|process)|diff\..*\.(textconv|command)|remote\..*\.(uploadpack|receivepack|proxy))$";

/// How the generated configs were judged: (safe, flagged for a key, refused by git).
#[derive(Debug, Default)]
struct Tally(usize, usize, usize);

/// What git's own view of one config must agree with; panics with the config on a
/// disagreement.
fn check(cfg: &[u8], safe: bool, gits: &[PathBuf], dir: &Path, regex: &str, tally: &mut Tally) {
    let file = dir.join("config");
    std::fs::write(&file, cfg).unwrap();
    let ours = unsafe_keys(cfg, &file);
    let flagged = !matches!(&ours, Ok(k) if k.is_empty());
    let show = || format!("{:?} (ours: {ours:?})", String::from_utf8_lossy(cfg));
    match &ours {
        Ok(k) if k.is_empty() => tally.0 += 1,
        Ok(_) => tally.1 += 1,
        Err(_) => tally.2 += 1,
    }
    if safe {
        assert!(!flagged, "a config of safe keys was flagged: {}", show());
    }
    let count = |out: Vec<u8>| out.split(|b| *b == 0).filter(|r| !r.is_empty()).count();
    for (i, git) in gits.iter().enumerate() {
        let Some(listed) = git_out(git, &["--no-includes", "--list", "-z"], &file) else {
            // git cannot read it: it runs nothing from it. The system git is the one the
            // judgement asked: it must have failed closed.
            assert!(
                i > 0 || ours.is_err(),
                "{} cannot read it, yet the judgement read it: {}",
                git.display(),
                show()
            );
            continue;
        };
        let all = count(listed.clone());
        let safe_n =
            count(git_out(git, &["--no-includes", "-z", "--get-regexp", regex], &file).unwrap());
        let commands = count(
            git_out(
                git,
                &["--no-includes", "-z", "--get-regexp", COMMAND_KEYS],
                &file,
            )
            .unwrap(),
        );
        let git_unsafe = all > safe_n;
        assert!(
            !git_unsafe || flagged,
            "{} reads an unsafe key, ours does not: {}",
            git.display(),
            show()
        );
        assert!(
            commands == 0 || flagged,
            "{} reads a command key, ours does not: {}",
            git.display(),
            show()
        );
        if i == 0 {
            assert_eq!(
                ours.as_ref().ok().map(|k| !k.is_empty()),
                Some(git_unsafe),
                "{}",
                show()
            );
            assert_eq!(
                parse_list(&listed),
                entries(cfg, &file).unwrap(),
                "{}",
                show()
            );
        }
        // hooks::may_include: a key git reads as `path` is spelled so in the file
        let spelled = cfg.windows(4).any(|w| w.eq_ignore_ascii_case(b"path"));
        let path_key = parse_list(&listed)
            .iter()
            .any(|e| e.key.ends_with(b".path"));
        assert!(spelled || !path_key, "{}", show());
    }
}

fn fuzz(seed: u64, n: usize) -> (usize, Tally) {
    let gits = gits();
    assert!(!gits.is_empty(), "no git on this machine");
    // the judgement's git first: its answers must match ours exactly
    let system = std::fs::canonicalize(crate::process::system_program("git").unwrap()).unwrap();
    let gits: Vec<PathBuf> = std::iter::once(system.clone())
        .chain(gits.into_iter().filter(|g| *g != system))
        .collect();
    let t = tempfile::tempdir().unwrap();
    let regex = safe_regex();
    let mut rng = Rng(seed | 1);
    let mut tally = Tally::default();
    for i in 0..n {
        let safe = i % 3 == 0;
        let cfg = config(&mut rng, safe);
        check(&cfg, safe, &gits, t.path(), &regex, &mut tally);
    }
    (gits.len(), tally)
}

#[test]
fn the_judgement_agrees_with_git_on_generated_configs() {
    let (_, Tally(safe, flagged, refused)) = fuzz(0x5eed_2222, 120);
    // the generator reaches every outcome
    assert!(
        safe > 40 && flagged > 20 && refused > 10,
        "{safe} {flagged} {refused}"
    );
}

/// The larger run, by hand: `PI_SANDBOX_FUZZ_CONFIGS=20000 cargo test --lib
/// git_config::tests::many -- --ignored --nocapture` (`PI_SANDBOX_FUZZ_SEED` to vary).
#[test]
#[ignore]
fn many_generated_configs_agree_with_git() {
    let n = std::env::var("PI_SANDBOX_FUZZ_CONFIGS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000);
    let seed = std::env::var("PI_SANDBOX_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0xfeed_f00d);
    let (gits, tally) = fuzz(seed, n);
    println!("{n} generated configs (seed {seed}), {gits} git binaries, no disagreement; (safe, flagged, refused by git): {tally:?}");
}
