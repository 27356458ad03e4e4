//! Path rules (denyRead entries, denyWrite patterns) matched against a canonical path and
//! each of its ancestors, so that a rule naming a directory covers everything below it.
//!
//! A decision must cost the same with 10 rules as with 10,000. Literal paths are one hash
//! lookup per ancestor. Globs are not run one by one, nor as one big regex set (whose cost
//! grows with the pattern count): every glob has a literal it cannot match without (`.pem`
//! in `*.pem`, `vault` in `**/vault/**`), and one Aho-Corasick pass over the path finds
//! which of those occur. Only the globs whose literal is there are tried, each compiled on
//! first use. The few globs without any literal (`*`, `[a-z]*`) form one small `GlobSet`.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use aho_corasick::AhoCorasick;
use globset::{Glob, GlobSet, GlobSetBuilder};
use rustc_hash::FxHashMap;

use crate::policy::config_values::Source;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    /// `denyRead entry '~/.ssh'`, `denyWrite pattern '*.pem'`, ...
    pub(crate) label: String,
    pub(crate) source: String,
}

/// What a glob is matched against: the last name of each ancestor (patterns without `/`),
/// or each whole ancestor path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Against {
    Name,
    Path,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct RuleSet {
    rules: Vec<Rule>,
    literal: FxHashMap<Box<[u8]>, usize>,
    names: Option<Arc<Globs>>,
    paths: Option<Arc<Globs>>,
}

#[derive(Default)]
pub(crate) struct RuleSetBuilder {
    set: RuleSet,
    names: Vec<(Glob, usize)>,
    paths: Vec<(Glob, usize)>,
}

impl RuleSetBuilder {
    fn push_rule(&mut self, rule: Rule) -> usize {
        self.set.rules.push(rule);
        self.set.rules.len() - 1
    }

    /// A canonical path: covers itself and everything below it.
    pub(crate) fn literal(&mut self, path: &Path, rule: Rule) {
        let i = self.push_rule(rule);
        // First rule wins when two entries name the same path.
        self.set
            .literal
            .entry(path.as_os_str().as_bytes().into())
            .or_insert(i);
    }

    /// A glob over names (no `/` in it).
    pub(crate) fn name_glob(&mut self, glob: Glob, rule: Rule) {
        let i = self.push_rule(rule);
        self.names.push((glob, i));
    }

    /// A glob over whole canonical paths.
    pub(crate) fn path_glob(&mut self, glob: Glob, rule: Rule) {
        let i = self.push_rule(rule);
        self.paths.push((glob, i));
    }

    /// The set. Its literal index builds on a thread of its own (with thousands of patterns
    /// that is most of the work); a decision made before it is ready waits for it.
    pub(crate) fn build(mut self) -> RuleSet {
        if !self.names.is_empty() {
            self.set.names = Some(Globs::start(self.names, Against::Name));
        }
        if !self.paths.is_empty() {
            self.set.paths = Some(Globs::start(self.paths, Against::Path));
        }
        self.set
    }
}

impl RuleSet {
    /// The first rule (in config order) that matches `path` or one of its ancestors.
    pub(crate) fn first_match(&self, path: &Path) -> Option<&Rule> {
        self.first_match_outside(path, None)
    }

    /// `first_match`, leaving out the ancestors strictly below `exempt` (a directory whose
    /// contents the rules do not apply to; the directory itself still counts). `path` is
    /// canonical: absolute, no `.`, `..` or repeated `/`.
    pub(crate) fn first_match_outside(&self, path: &Path, exempt: Option<&Path>) -> Option<&Rule> {
        let bytes = path.as_os_str().as_bytes();
        let floor = exempt.map(|e| e.as_os_str().as_bytes());
        let ancestors: Vec<&[u8]> = ancestors(bytes)
            .skip_while(|a| floor.is_some_and(|e| a.len() > e.len() && is_below(a, e)))
            .collect();
        let mut best: Option<usize> = None;
        let mut keep = |i: usize| {
            if best.is_none_or(|b| i < b) {
                best = Some(i);
            }
        };
        for a in &ancestors {
            if let Some(&i) = self.literal.get(*a) {
                keep(i);
            }
        }
        for globs in self.names.iter().chain(&self.paths) {
            if let Err(failed) = globs.each_match(bytes, &ancestors, &mut keep) {
                return Some(failed);
            }
        }
        best.map(|i| &self.rules[i])
    }
}

/// `path` and each of its ancestors, longest first, as byte prefixes of a canonical path.
fn ancestors(path: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut end = Some(path.len());
    std::iter::from_fn(move || {
        let e = end?;
        let here = if e == 0 { &path[..1] } else { &path[..e] };
        end = match path[..e].iter().rposition(|&b| b == b'/') {
            _ if e <= 1 => None,
            Some(i) => Some(i),
            None => None,
        };
        Some(here)
    })
}

fn is_below(a: &[u8], dir: &[u8]) -> bool {
    a.starts_with(dir) && (dir.ends_with(b"/") || a.get(dir.len()) == Some(&b'/'))
}

fn last_name(path: &[u8]) -> Option<&[u8]> {
    let i = path.iter().rposition(|&b| b == b'/')?;
    let name = &path[i + 1..];
    (!name.is_empty()).then_some(name)
}

/// One kind of glob rules and what finds them fast.
struct Globs {
    against: Against,
    globs: Vec<(Glob, usize)>,
    /// Each glob compiled on first use: Err when it cannot be (it then matches, fail closed).
    compiled: Vec<OnceLock<Result<GlobSet, ()>>>,
    index: OnceLock<Result<LiteralIndex, Rule>>,
}

impl std::fmt::Debug for Globs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Globs")
            .field("against", &self.against)
            .field("globs", &self.globs.len())
            .finish()
    }
}

struct LiteralIndex {
    /// Every distinct required literal; pattern `i` is `literals[i]`.
    finder: Option<AhoCorasick>,
    /// For each literal, the globs that need it.
    needing: Vec<Vec<usize>>,
    /// Globs without a literal, in one set (indices into `Globs::globs`).
    rest: Option<(GlobSet, Vec<usize>)>,
}

impl Globs {
    fn start(globs: Vec<(Glob, usize)>, against: Against) -> Arc<Globs> {
        let compiled = globs.iter().map(|_| OnceLock::new()).collect();
        let this = Arc::new(Globs {
            against,
            globs,
            compiled,
            index: OnceLock::new(),
        });
        let background = this.clone();
        // Without a thread, the first decision builds it.
        let _ = std::thread::Builder::new()
            .name("pi-sandbox-globs".into())
            .spawn(move || {
                let _ = background.index();
            });
        this
    }

    fn index(&self) -> Result<&LiteralIndex, &Rule> {
        self.index
            .get_or_init(|| {
                LiteralIndex::build(&self.globs).map_err(|why| Rule {
                    label: format!("denyWrite patterns (they could not be compiled: {why})"),
                    source: Source::Mandatory.to_string(),
                })
            })
            .as_ref()
    }

    fn matcher(&self, i: usize) -> Result<&GlobSet, ()> {
        self.compiled[i]
            .get_or_init(|| {
                let mut one = GlobSetBuilder::new();
                one.add(self.globs[i].0.clone());
                one.build().map_err(|_| ())
            })
            .as_ref()
            .map_err(|_| ())
    }

    /// Calls `keep` with the rule of every glob matching one of `ancestors` (of `path`).
    fn each_match(
        &self,
        path: &[u8],
        ancestors: &[&[u8]],
        keep: &mut dyn FnMut(usize),
    ) -> Result<(), &Rule> {
        let index = self.index()?;
        let mut tried: Vec<usize> = Vec::new();
        if let Some(finder) = &index.finder {
            // Every subject is part of `path`: a literal missing from `path` is missing from
            // all of them.
            for m in finder.find_overlapping_iter(path) {
                for &g in &index.needing[m.pattern().as_usize()] {
                    if tried.contains(&g) {
                        continue;
                    }
                    tried.push(g);
                    let matched = match self.matcher(g) {
                        Ok(set) => ancestors
                            .iter()
                            .filter_map(|a| self.subject(a))
                            .any(|s| set.is_match(Path::new(OsStr::from_bytes(s)))),
                        Err(()) => true,
                    };
                    if matched {
                        keep(self.globs[g].1);
                    }
                }
            }
        }
        if let Some((set, which)) = &index.rest {
            for s in ancestors.iter().filter_map(|a| self.subject(a)) {
                for m in set.matches(Path::new(OsStr::from_bytes(s))) {
                    keep(self.globs[which[m]].1);
                }
            }
        }
        Ok(())
    }

    fn subject<'a>(&self, ancestor: &'a [u8]) -> Option<&'a [u8]> {
        match self.against {
            Against::Name => last_name(ancestor),
            Against::Path => Some(ancestor),
        }
    }
}

impl LiteralIndex {
    fn build(globs: &[(Glob, usize)]) -> Result<LiteralIndex, String> {
        let mut literals: Vec<String> = Vec::new();
        let mut slot: HashMap<String, usize> = HashMap::new();
        let mut needing: Vec<Vec<usize>> = Vec::new();
        let mut rest = GlobSetBuilder::new();
        let mut rest_which = Vec::new();
        for (g, (glob, _)) in globs.iter().enumerate() {
            match required_literal(glob.glob()) {
                Some(lit) => {
                    let i = *slot.entry(lit.clone()).or_insert_with(|| {
                        literals.push(lit);
                        needing.push(Vec::new());
                        literals.len() - 1
                    });
                    needing[i].push(g);
                }
                None => {
                    rest.add(glob.clone());
                    rest_which.push(g);
                }
            }
        }
        let finder = if literals.is_empty() {
            None
        } else {
            Some(AhoCorasick::new(&literals).map_err(|e| e.to_string())?)
        };
        let rest = if rest_which.is_empty() {
            None
        } else {
            Some((rest.build().map_err(|e| e.to_string())?, rest_which))
        };
        Ok(LiteralIndex {
            finder,
            needing,
            rest,
        })
    }
}

/// The longest run of characters every match of `pattern` must contain, read the way globset
/// reads it with backslash escapes on: wildcards, classes (`[...]`) and alternatives
/// (`{a,b}`) end a run, and a `/` next to `**` is not required (`**/x` matches `x`). None
/// when there is no such run.
pub(crate) fn required_literal(pattern: &str) -> Option<String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut best = String::new();
    let mut run = String::new();
    let mut end_run = |run: &mut String| {
        if run.chars().count() > best.chars().count() {
            best = run.clone();
        }
        run.clear();
    };
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                // An escaped character stands for itself; a trailing `\` is a parse error
                // globset already reported.
                if let Some(&c) = chars.get(i + 1) {
                    run.push(c);
                }
                i += 2;
            }
            '*' => {
                let double = chars.get(i + 1) == Some(&'*');
                if double && run.ends_with('/') {
                    run.pop();
                }
                end_run(&mut run);
                i += if double { 2 } else { 1 };
                if double && chars.get(i) == Some(&'/') {
                    i += 1;
                }
            }
            '?' => {
                end_run(&mut run);
                i += 1;
            }
            '[' => {
                end_run(&mut run);
                // `[]...]` and `[!]...]`: a `]` first in the class is part of it.
                let mut j = i + 1;
                if matches!(chars.get(j), Some('!') | Some('^')) {
                    j += 1;
                }
                if chars.get(j) == Some(&']') {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    j += 1;
                }
                i = j + 1;
            }
            '{' => {
                end_run(&mut run);
                let mut depth = 0usize;
                let mut j = i;
                while j < chars.len() {
                    match chars[j] {
                        '\\' => j += 1,
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                i = j + 1;
            }
            c => {
                run.push(c);
                i += 1;
            }
        }
    }
    end_run(&mut run);
    (!best.is_empty()).then_some(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use globset::GlobBuilder;

    fn glob(p: &str) -> Glob {
        GlobBuilder::new(p)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .unwrap()
    }

    #[test]
    fn required_literals() {
        for (pattern, want) in [
            ("*.pem", Some(".pem")),
            ("**/vault/**", Some("vault")),
            ("/p/config/**/*.json", Some("/p/config")),
            ("secret-*.*", Some("secret-")),
            ("*", None),
            ("[a-z]*", None),
            ("{a,b}*", None),
            ("x{abc,d}yz", Some("yz")),
            ("\\*star", Some("*star")),
            ("[]x]abc", Some("abc")),
            ("a/**", Some("a")),
            (".env", Some(".env")),
        ] {
            assert_eq!(required_literal(pattern).as_deref(), want, "{pattern}");
        }
    }

    #[test]
    fn ancestors_are_byte_prefixes_longest_first() {
        let all: Vec<&[u8]> = ancestors(b"/a/bc/d").collect();
        assert_eq!(all, vec![&b"/a/bc/d"[..], b"/a/bc", b"/a", b"/"]);
        assert_eq!(ancestors(b"/").collect::<Vec<_>>(), vec![&b"/"[..]]);
        assert_eq!(last_name(b"/a/bc"), Some(&b"bc"[..]));
        assert_eq!(last_name(b"/"), None);
    }

    /// A tiny deterministic generator (no dependency for a unit test).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n
        }
        fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
            xs[self.next(xs.len())]
        }
    }

    /// The literal index finds exactly what one plain `GlobSet` over every pattern finds,
    /// for random patterns and random paths built from the same pieces.
    #[test]
    fn agrees_with_a_plain_globset() {
        let pieces = ["a", "b", "ab", ".e", "x.y", "vault", "\\*", "-"];
        let wild = ["*", "?", "**", "[ab]", "{a,x.y}", "[!a]"];
        let mut rng = Lcg(7);
        let (mut hits, mut misses) = (0, 0);
        for round in 0..300 {
            let mut names = RuleSetBuilder::default();
            let mut paths = RuleSetBuilder::default();
            let mut plain_names = GlobSetBuilder::new();
            let mut plain_paths = GlobSetBuilder::new();
            let (mut name_labels, mut path_labels) = (Vec::new(), Vec::new());
            for r in 0..(1 + rng.next(12)) {
                let mut p = String::new();
                let anchored = rng.next(2) == 0;
                if anchored {
                    p.push_str(rng.pick(&["/", "**/", "/a/"]));
                }
                for _ in 0..(1 + rng.next(4)) {
                    if rng.next(3) == 0 {
                        let w = rng.pick(&wild);
                        if w == "**" && !anchored {
                            continue;
                        }
                        p.push_str(w);
                    } else {
                        p.push_str(rng.pick(&pieces));
                    }
                    if anchored && rng.next(3) == 0 {
                        p.push('/');
                    }
                }
                let rule = Rule {
                    label: format!("{r}"),
                    source: String::new(),
                };
                if anchored {
                    let Ok(g) = GlobBuilder::new(&p)
                        .literal_separator(true)
                        .backslash_escape(true)
                        .build()
                    else {
                        continue;
                    };
                    paths.path_glob(g.clone(), rule);
                    plain_paths.add(g);
                    path_labels.push(format!("{r}"));
                } else {
                    names.name_glob(glob(&p), rule);
                    plain_names.add(glob(&p));
                    name_labels.push(format!("{r}"));
                }
            }
            let (names, paths) = (names.build(), paths.build());
            let (plain_names, plain_paths) =
                (plain_names.build().unwrap(), plain_paths.build().unwrap());
            for _ in 0..40 {
                let mut path = String::new();
                for _ in 0..(1 + rng.next(4)) {
                    path.push('/');
                    for _ in 0..(1 + rng.next(3)) {
                        path.push_str(
                            rng.pick(&["a", "b", "ab", ".e", "x.y", "vault", "*", "-", "q"]),
                        );
                    }
                }
                let ancestors: Vec<&[u8]> = ancestors(path.as_bytes()).collect();
                let as_path = |b: &[u8]| Path::new(OsStr::from_bytes(b)).to_path_buf();
                let first = |set: &GlobSet, name_kind: bool| {
                    ancestors
                        .iter()
                        .filter_map(|a| if name_kind { last_name(a) } else { Some(*a) })
                        .flat_map(|s| set.matches(as_path(s)))
                        .min()
                };
                let want_name = first(&plain_names, true).map(|i| name_labels[i].clone());
                let want_path = first(&plain_paths, false).map(|i| path_labels[i].clone());
                let got_name = names.first_match(Path::new(&path)).map(|r| r.label.clone());
                let got_path = paths.first_match(Path::new(&path)).map(|r| r.label.clone());
                for got in [&got_name, &got_path] {
                    if got.is_some() {
                        hits += 1;
                    } else {
                        misses += 1;
                    }
                }
                assert_eq!(
                    got_name, want_name,
                    "round {round}: {name_labels:?}, path {path}"
                );
                assert_eq!(
                    got_path, want_path,
                    "round {round}: {path_labels:?}, path {path}"
                );
            }
        }
        // Both outcomes must be common, or the comparison says little.
        assert!(
            hits > 2000 && misses > 2000,
            "{hits} matches, {misses} misses"
        );
    }
}
