//! Secrets kept out of what the model reads: every known secret value in a tool's output is
//! replaced by `[redacted: NAME]` before pi hands it to the model. The values are those of
//! the variables dropped from sandboxed commands' environment (`environment`), the keys in
//! pi's `auth.json` and `models.json`, and what the user lists (`redact.values`,
//! `redact.env`).
//!
//! An Aho-Corasick automaton finds them (leftmost-longest, so of two secrets where one begins
//! the other the longer is hidden whole); past 64 secrets a skip table in front of it steps
//! over the text where no secret can begin (`Matcher`). `RedactStream` gives
//! the same result over output that arrives in chunks: it holds back the end of each chunk
//! that is the beginning of a secret, which is exactly what a secret split across the
//! boundary could still need (and no more: output streams on while nothing could be a secret).
//!
//! Pure but for `pi_file_secrets` and `models_json_credentials`, which read pi's files at the
//! edge.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use aho_corasick::{
    AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, Anchored, Input, MatchKind, StartKind,
};

/// Values shorter than this are never redacted: a variable that holds `1`, `true` or `dev`
/// is not a secret, and hiding every such word would garble the output.
pub(crate) const MIN_SECRET_LEN: usize = 8;

/// One value to hide, and the name shown in its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Secret {
    pub(crate) name: String,
    pub(crate) value: String,
}

/// Up to this many secrets, one automaton's own prefilter is a SIMD search (Teddy); past it
/// that prefilter falls back to rare bytes, and ordinary output slows it several times.
const SIMD_LIMIT: usize = 64;

/// The search over every secret: leftmost-longest, non-overlapping matches.
#[derive(Debug, Clone)]
enum Matcher {
    /// One automaton, searched with its own prefilter.
    Automaton(AhoCorasick),
    /// Past `SIMD_LIMIT` secrets: a skip table over 3-byte blocks (Wu and Manber's idea)
    /// finds the few places where a secret may begin, and an anchored automaton checks each.
    Skipping(Skipper),
}

/// The skip table's blocks: three bytes (with two, the digits and hex letters of ordinary
/// output matched some secret's blocks nearly everywhere).
const BLOCK: usize = 3;

fn block_slot(b: &[u8]) -> usize {
    let v = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
    (v.wrapping_mul(0x9E37_79B1) >> 16) as usize
}

#[derive(Debug, Clone)]
struct Skipper {
    /// Leftmost-longest, anchored searches only.
    anchored: AhoCorasick,
    /// The shortest secret's length: the window the blocks are taken from.
    window: usize,
    /// For each block (hashed): how far the window may move when it ends with it.
    shift: Vec<u8>,
}

/// Built from plain strings, an automaton cannot fail short of a pattern set far beyond any
/// session's secrets; without one nothing would be hidden, so it does not go on silently.
fn automaton(values: &[String], start: StartKind) -> AhoCorasick {
    AhoCorasickBuilder::new()
        .match_kind(MatchKind::LeftmostLongest)
        // A full DFA: the fastest search, and small for a session's secrets.
        .kind(Some(AhoCorasickKind::DFA))
        .start_kind(start)
        .build(values)
        .expect("the secrets' matcher")
}

impl Matcher {
    fn build(values: &[String]) -> Matcher {
        if values.len() <= SIMD_LIMIT {
            return Matcher::Automaton(automaton(values, StartKind::Unanchored));
        }
        let window = values
            .iter()
            .map(String::len)
            .min()
            .unwrap_or(MIN_SECRET_LEN);
        // A window ending with a block that no secret's first `window` bytes hold may move by
        // `window - BLOCK + 1`: the block's last bytes could still begin a secret. Blocks are
        // hashed into the table; two sharing an entry share the smaller shift, which is safe.
        let far = (window - BLOCK + 1).min(u8::MAX as usize) as u8;
        let mut shift = vec![far; 1 << 16];
        for v in values {
            let v = v.as_bytes();
            for j in 0..=window - BLOCK {
                // The block at j of the secret: the window that ends with it must move by
                // what would align its end with the end of the secret's first `window` bytes.
                let d = (window - BLOCK - j).min(u8::MAX as usize) as u8;
                let slot = block_slot(&v[j..j + BLOCK]);
                shift[slot] = shift[slot].min(d);
            }
        }
        Matcher::Skipping(Skipper {
            anchored: automaton(values, StartKind::Anchored),
            window,
            shift,
        })
    }

    /// The leftmost-longest, non-overlapping matches in `text`: (start, end, pattern).
    fn find(&self, text: &[u8]) -> Vec<(usize, usize, usize)> {
        match self {
            Matcher::Automaton(ac) => ac
                .find_iter(text)
                .map(|m| (m.start(), m.end(), m.pattern().as_usize()))
                .collect(),
            Matcher::Skipping(sk) => sk.find(text),
        }
    }
}

impl Skipper {
    fn find(&self, text: &[u8]) -> Vec<(usize, usize, usize)> {
        let mut out = Vec::new();
        // `end` is one past the window's last byte; the window starts at `end - window`.
        let mut end = self.window;
        while end <= text.len() {
            let d = self.shift[block_slot(&text[end - BLOCK..end])] as usize;
            if d > 0 {
                end += d;
                continue;
            }
            let start = end - self.window;
            let input = Input::new(text)
                .span(start..text.len())
                .anchored(Anchored::Yes);
            match self.anchored.find(input) {
                Some(m) => {
                    out.push((m.start(), m.end(), m.pattern().as_usize()));
                    end = m.end() + self.window;
                }
                None => end += 1,
            }
        }
        out
    }
}

/// The compiled matcher over every secret of a session.
#[derive(Debug, Clone)]
pub(crate) struct Redactor {
    matcher: Option<Matcher>,
    /// The replacement of each pattern, by pattern index.
    replacements: Vec<Vec<u8>>,
    /// The names redacted, sorted and unique, for `/sandbox`.
    names: Vec<String>,
    /// The values, sorted: which text could be the beginning of one (`held_back`).
    sorted: Vec<Vec<u8>>,
    /// Which bytes a value begins with.
    first_bytes: [bool; 256],
    longest: usize,
}

impl Redactor {
    /// A redactor for `secrets`: values under `MIN_SECRET_LEN` bytes are left out; a value
    /// listed under several names is shown under the first.
    pub(crate) fn new(secrets: impl IntoIterator<Item = Secret>) -> Redactor {
        let mut by_value: BTreeMap<String, String> = BTreeMap::new();
        for s in secrets {
            if s.value.len() >= MIN_SECRET_LEN {
                by_value.entry(s.value).or_insert(s.name);
            }
        }
        let mut names: Vec<String> = by_value.values().cloned().collect();
        names.sort();
        names.dedup();
        let longest = by_value.keys().map(String::len).max().unwrap_or(0);
        let (values, replacements): (Vec<String>, Vec<Vec<u8>>) = by_value
            .into_iter()
            .map(|(value, name)| (value, format!("[redacted: {name}]").into_bytes()))
            .unzip();
        let matcher = (!values.is_empty()).then(|| Matcher::build(&values));
        // A BTreeMap's String keys come in byte order.
        let sorted: Vec<Vec<u8>> = values.into_iter().map(String::into_bytes).collect();
        let mut first_bytes = [false; 256];
        for v in &sorted {
            first_bytes[usize::from(v[0])] = true;
        }
        Redactor {
            matcher,
            replacements,
            names,
            sorted,
            first_bytes,
            longest,
        }
    }

    /// How many bytes at the end of `text` must wait for more: the longest end of it that
    /// a secret begins with and goes on past (bytes to come could complete it).
    fn held_back(&self, text: &[u8]) -> usize {
        let most = text.len().min(self.longest.saturating_sub(1));
        (1..=most)
            .rev()
            .find(|&l| {
                let end = &text[text.len() - l..];
                if !self.first_bytes[usize::from(end[0])] {
                    return false;
                }
                // The values that begin with `end` follow one another from where it would go.
                let at = self.sorted.partition_point(|v| v.as_slice() < end);
                self.sorted[at..]
                    .iter()
                    .take(2)
                    .any(|v| v.len() > l && v.starts_with(end))
            })
            .unwrap_or(0)
    }

    /// Whether there is nothing to hide (the callers then skip the work entirely).
    pub(crate) fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// The names whose values are hidden (never the values).
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    /// `text` with every secret replaced; borrowed when there was none.
    pub(crate) fn redact<'a>(&self, text: &'a [u8]) -> Cow<'a, [u8]> {
        let Some(matcher) = &self.matcher else {
            return Cow::Borrowed(text);
        };
        let matches = matcher.find(text);
        if matches.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = Vec::with_capacity(text.len());
        let pos = self.replace_into(&mut out, text, &matches);
        out.extend_from_slice(&text[pos..]);
        Cow::Owned(out)
    }

    /// `text` up to the end of the last of `matches` into `out`, each match replaced; returns
    /// where that is.
    fn replace_into(
        &self,
        out: &mut Vec<u8>,
        text: &[u8],
        matches: &[(usize, usize, usize)],
    ) -> usize {
        let mut pos = 0;
        for &(start, end, pattern) in matches {
            out.extend_from_slice(&text[pos..start]);
            out.extend_from_slice(&self.replacements[pattern]);
            pos = end;
        }
        pos
    }

    /// `redact` for text.
    pub(crate) fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.redact(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            // Secrets and replacements are whole UTF-8 strings: cutting them out of valid
            // UTF-8 leaves valid UTF-8.
            Cow::Owned(bytes) => Cow::Owned(
                String::from_utf8(bytes)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            ),
        }
    }
}

/// Redaction of one output stream that arrives in chunks.
///
/// Its buffers are kept from one chunk to the next: output arrives in chunks of the same
/// size, and fresh memory for each (page faults, a new JS buffer's finaliser) cost more than
/// the search itself.
#[derive(Debug)]
pub(crate) struct RedactStream {
    redactor: Arc<Redactor>,
    /// What was held back of the last chunk (a secret could still begin in it), then this
    /// chunk: `buf[..passed]` is what the last `push` passed on.
    buf: Vec<u8>,
    passed: usize,
    /// The redacted output, when a chunk had something to hide.
    out: Vec<u8>,
}

/// Past this, a stream's buffers are given back after a large chunk.
const KEPT_CAPACITY: usize = 4 << 20;

impl RedactStream {
    pub(crate) fn new(redactor: Arc<Redactor>) -> RedactStream {
        RedactStream {
            redactor,
            buf: Vec::new(),
            passed: 0,
            out: Vec::new(),
        }
    }

    /// What of `chunk` (after what was held back before) can be passed on now, redacted.
    /// Valid until the next call.
    pub(crate) fn push<'a>(&'a mut self, chunk: &'a [u8]) -> &'a [u8] {
        self.buf.drain(..self.passed);
        self.passed = 0;
        self.buf.shrink_to(KEPT_CAPACITY);
        self.out.shrink_to(KEPT_CAPACITY);
        let Some(matcher) = &self.redactor.matcher else {
            return chunk;
        };
        self.buf.extend_from_slice(chunk);
        // From `safe` on, the buffer is the beginning of a secret that bytes to come could
        // complete; before it, no match can change (a longer secret starting there would
        // make the text from there the beginning of one), so all of it is passed on.
        let safe = self.buf.len() - self.redactor.held_back(&self.buf);
        let mut matches = matcher.find(&self.buf);
        matches.retain(|m| m.0 < safe);
        if matches.is_empty() {
            // The common case: nothing to hide, and the buffer itself is passed on.
            self.passed = safe;
            return &self.buf[..safe];
        }
        self.out.clear();
        let pos = self
            .redactor
            .replace_into(&mut self.out, &self.buf, &matches);
        self.passed = pos.max(safe);
        self.out.extend_from_slice(&self.buf[pos..self.passed]);
        &self.out
    }

    /// The rest, at the end of the stream.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let held = self.buf.split_off(self.passed);
        self.buf = Vec::new();
        self.out = Vec::new();
        self.passed = 0;
        self.redactor.redact(&held).into_owned()
    }
}

/// The secrets in pi's own files under `agent_dir`: every string in `auth.json` under each
/// provider (keys and OAuth tokens; `type` excepted), and each credential in `models.json`
/// (`apiKey` and `headers`, `models_json_credentials`): its literal value, or the
/// value of the variable it names; one starting with `!` is a command pi runs, with no value
/// to know here. Missing or unreadable files give none.
pub(crate) fn pi_file_secrets(agent_dir: &Path, env: &BTreeMap<String, String>) -> Vec<Secret> {
    let mut out = Vec::new();
    let read = |name: &str| -> Option<serde_json::Value> {
        let text = std::fs::read_to_string(agent_dir.join(name)).ok()?;
        serde_json::from_str(&text).ok()
    };
    if let Some(serde_json::Value::Object(providers)) = read("auth.json") {
        for (provider, entry) in providers {
            collect_strings(&entry, &format!("auth.json {provider}"), &mut out);
        }
    }
    for (at, value) in models_json_credentials(agent_dir) {
        if let Some(from_env) = env.get(&value) {
            out.push(Secret {
                name: value.clone(),
                value: from_env.clone(),
            });
        } else if !value.starts_with('!') {
            out.push(Secret { name: at, value });
        }
    }
    out
}

/// The values pi's `models.json` resolves as credentials, each with where it is: every
/// provider's `apiKey` and `headers`, and each model's `headers`. pi reads such a value as the
/// variable it names when one is set, runs it when it starts with `!`, and takes it literally
/// otherwise. A file that is missing or unreadable has none; pi reports its errors itself.
/// Here, below `policy`, so that `environment` (which drops the variables) and
/// `pi_file_secrets` (which hides the values) read the file one way.
pub(crate) fn models_json_credentials(agent_dir: &Path) -> Vec<(String, String)> {
    let Ok(text) = std::fs::read_to_string(agent_dir.join("models.json")) else {
        return vec![];
    };
    let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else {
        return vec![];
    };
    let mut out = Vec::new();
    let headers = |v: &serde_json::Value, at: &str, out: &mut Vec<(String, String)>| {
        if let Some(h) = v.get("headers").and_then(|h| h.as_object()) {
            for (name, value) in h {
                if let Some(value) = value.as_str() {
                    out.push((format!("{at} header {name}"), value.to_string()));
                }
            }
        }
    };
    if let Some(providers) = json.get("providers").and_then(|p| p.as_object()) {
        for (name, provider) in providers {
            let at = format!("models.json {name}");
            if let Some(key) = provider.get("apiKey").and_then(|k| k.as_str()) {
                out.push((format!("{at} apiKey"), key.to_string()));
            }
            headers(provider, &at, &mut out);
            for model in provider
                .get("models")
                .and_then(|m| m.as_array())
                .into_iter()
                .flatten()
            {
                let id = model.get("id").and_then(|i| i.as_str()).unwrap_or("?");
                headers(model, &format!("{at}/{id}"), &mut out);
            }
        }
    }
    out
}

fn collect_strings(v: &serde_json::Value, name: &str, out: &mut Vec<Secret>) {
    match v {
        serde_json::Value::String(s) => out.push(Secret {
            name: name.to_string(),
            value: s.clone(),
        }),
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                if k != "type" {
                    collect_strings(v, name, out);
                }
            }
        }
        serde_json::Value::Array(items) => {
            for v in items {
                collect_strings(v, name, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(name: &str, value: &str) -> Secret {
        Secret {
            name: name.into(),
            value: value.into(),
        }
    }

    fn redactor(pairs: &[(&str, &str)]) -> Arc<Redactor> {
        Arc::new(Redactor::new(pairs.iter().map(|(n, v)| secret(n, v))))
    }

    fn streamed(r: &Arc<Redactor>, chunks: &[&[u8]]) -> Vec<u8> {
        let mut s = RedactStream::new(r.clone());
        let mut out = Vec::new();
        for c in chunks {
            out.extend(s.push(c));
        }
        out.extend(s.finish());
        out
    }

    #[test]
    fn each_secret_is_replaced_by_its_name() {
        let r = redactor(&[
            ("GITHUB_TOKEN", "ghp_abcdef123456"),
            ("DB", "hunter22hunter22"),
        ]);
        assert_eq!(
            r.redact_str("token=ghp_abcdef123456 pw=hunter22hunter22."),
            "token=[redacted: GITHUB_TOKEN] pw=[redacted: DB]."
        );
        assert!(matches!(r.redact(b"nothing here"), Cow::Borrowed(_)));
        assert_eq!(r.names(), ["DB", "GITHUB_TOKEN"]);
    }

    #[test]
    fn short_values_are_not_secrets() {
        let r = redactor(&[("DEBUG", "1"), ("MODE", "dev")]);
        assert!(r.is_empty());
        assert_eq!(r.redact_str("1 dev"), "1 dev");
    }

    #[test]
    fn the_longer_of_two_overlapping_secrets_is_hidden_whole() {
        let r = redactor(&[("SHORT", "abcdefgh"), ("LONG", "abcdefghijkl")]);
        assert_eq!(r.redact_str("xabcdefghijklx"), "x[redacted: LONG]x");
        assert_eq!(r.redact_str("xabcdefghijx"), "x[redacted: SHORT]ijx");
    }

    #[test]
    fn output_streams_on_unless_its_end_could_begin_a_secret() {
        // Long secrets do not hold back output that begins none of them: `tick-1` is
        // passed on as it comes (a command's progress shows while it runs).
        let r = redactor(&[("LONG", &"x".repeat(500)), ("URL", "mongodb://u:p@db/x")]);
        let mut s = RedactStream::new(r.clone());
        assert_eq!(s.push(b"tick-1\n"), b"tick-1\n");
        assert_eq!(s.push(b"tick-2\n"), b"tick-2\n");
        // An end that a secret begins with waits, and only that end.
        assert_eq!(s.push(b"uri: mongo"), b"uri: ");
        assert_eq!(s.push(b"db://u:p@db/x!"), b"[redacted: URL]!");
        assert_eq!(s.push(b"xxx"), b"");
        assert_eq!(s.push(b"y"), b"xxxy");
        assert!(s.finish().is_empty());
        // A whole secret at the end waits only when a longer one could go on from it.
        let r = redactor(&[("SHORT", "abcdefgh"), ("LONG", "abcdefghijkl")]);
        let mut s = RedactStream::new(r.clone());
        assert_eq!(s.push(b"1 abcdefgh"), b"1 ");
        assert_eq!(s.push(b" 2"), b"[redacted: SHORT] 2");
    }

    #[test]
    fn a_secret_split_across_chunks_is_still_hidden() {
        let r = redactor(&[("KEY", "sk-live-0123456789")]);
        let text = b"before sk-live-0123456789 after";
        for cut in 0..=text.len() {
            let out = streamed(&r, &[&text[..cut], &text[cut..]]);
            assert_eq!(out, b"before [redacted: KEY] after", "cut at {cut}");
        }
        // One byte at a time.
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(streamed(&r, &bytes), b"before [redacted: KEY] after");
    }

    #[test]
    fn pi_files_give_their_keys() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(
            t.path().join("auth.json"),
            r#"{"anthropic":{"type":"api_key","key":"sk-ant-secret-1"},
               "openai-codex":{"type":"oauth","access":"access-token-2","refresh":"refresh-token-3","expires":1}}"#,
        )
        .unwrap();
        std::fs::write(
            t.path().join("models.json"),
            r#"{"providers":{"local":{"apiKey":"literal-key-4","headers":{"X-Api-Token":"header-token-6"}},"byenv":{"apiKey":"MY_KEY","models":[{"id":"m","headers":{"Authorization":"Bearer model-header-7"}}]},"cmd":{"apiKey":"!pass show x"}}}"#,
        )
        .unwrap();
        let env = BTreeMap::from([("MY_KEY".to_string(), "value-from-env-5".to_string())]);
        let got = pi_file_secrets(t.path(), &env);
        let values: Vec<&str> = got.iter().map(|s| s.value.as_str()).collect();
        for want in [
            "sk-ant-secret-1",
            "access-token-2",
            "refresh-token-3",
            "literal-key-4",
            "value-from-env-5",
            "header-token-6",
            "Bearer model-header-7",
        ] {
            assert!(values.contains(&want), "{want} in {values:?}");
        }
        assert!(!values.contains(&"api_key") && !values.contains(&"oauth"));
        assert!(!values.iter().any(|v| v.starts_with('!')));
        let names: Vec<&str> = got.iter().map(|s| s.name.as_str()).collect();
        assert!(names.contains(&"auth.json anthropic"));
        assert!(names.contains(&"MY_KEY"));
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// Secrets over a two-letter alphabet, so that they overlap and share prefixes often.
        fn secrets() -> impl Strategy<Value = Vec<String>> {
            proptest::collection::vec("[ab]{8,14}", 1..6)
        }

        /// Text made of secrets and filler from the same alphabet (and other bytes), with
        /// the cut points of its chunks.
        fn text_and_cuts(
            secrets: Vec<String>,
        ) -> impl Strategy<Value = (Vec<String>, Vec<u8>, Vec<usize>)> {
            let n = secrets.len();
            let piece = prop_oneof![(0..n).prop_map(Some), Just(None),];
            (
                proptest::collection::vec((piece, "[abx]{0,6}"), 0..12),
                proptest::collection::vec(0usize..200, 0..8),
            )
                .prop_map(move |(pieces, mut cuts)| {
                    let mut text = Vec::new();
                    for (secret, filler) in pieces {
                        if let Some(i) = secret {
                            text.extend_from_slice(secrets[i].as_bytes());
                        }
                        text.extend_from_slice(filler.as_bytes());
                    }
                    cuts.iter_mut().for_each(|c| *c = (*c).min(text.len()));
                    cuts.sort();
                    (secrets.clone(), text, cuts)
                })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(400))]

            /// Past 64 secrets the skipping search finds exactly what one automaton would.
            #[test]
            fn skipping_finds_what_one_automaton_would(
                values in proptest::collection::btree_set("[abc]{8,12}", 65..100),
                pieces in proptest::collection::vec((0usize..1000, "[abcx]{0,9}"), 0..40),
            ) {
                let values: Vec<String> = values.into_iter().collect();
                let mut text = Vec::new();
                for (i, filler) in pieces {
                    text.extend_from_slice(filler.as_bytes());
                    if i % 3 != 0 {
                        text.extend_from_slice(values[i % values.len()].as_bytes());
                    }
                }
                let skipping = Matcher::build(&values);
                prop_assert!(matches!(skipping, Matcher::Skipping(_)));
                let one = Matcher::Automaton(automaton(&values, StartKind::Unanchored));
                prop_assert_eq!(skipping.find(&text), one.find(&text));
            }

            /// Streamed in any chunks, the output is the whole text's redaction, and no
            /// secret is left in it.
            #[test]
            fn chunks_change_nothing((secrets, text, cuts) in secrets().prop_flat_map(text_and_cuts)) {
                let r = Arc::new(Redactor::new(
                    secrets.iter().enumerate().map(|(i, v)| secret(&format!("S{i}"), v)),
                ));
                let whole = r.redact(&text).into_owned();
                let mut chunks = Vec::new();
                let mut at = 0;
                for c in cuts {
                    chunks.push(&text[at..c]);
                    at = c;
                }
                chunks.push(&text[at..]);
                prop_assert_eq!(&streamed(&r, &chunks), &whole);
                for v in &secrets {
                    let found = whole.windows(v.len()).any(|w| w == v.as_bytes());
                    prop_assert!(!found, "{} left in {:?}", v, String::from_utf8_lossy(&whole));
                }
            }
        }
    }

    /// The redactor alone, without N-API (bench/hardening-bench.mjs measures it through
    /// Node): 100 MB of log-like output holding 1,000 occurrences of 100 token-shaped
    /// secrets, pushed through a `RedactStream` in 64 KiB chunks.
    /// `cargo test --release --lib redact_throughput -- --ignored --nocapture`
    #[test]
    #[ignore = "a benchmark"]
    fn redact_throughput() {
        use std::time::Instant;
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        const B62: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let mut b62 = |n: usize| -> String {
            (0..n)
                .map(|_| B62[(next() % 62) as usize] as char)
                .collect()
        };
        let secrets: Vec<String> = (0..100)
            .map(|i| match i % 6 {
                0 => format!("ghp_{}", b62(36)),
                1 => format!("sk-ant-api03-{}", b62(40)),
                2 => format!("xoxb-{}", b62(30)),
                3 => format!("AKIA{}", b62(16).to_uppercase()),
                4 => format!("npm_{}", b62(36)),
                _ => b62(40).bytes().map(|b| format!("{:x}", b % 16)).collect(),
            })
            .collect();
        let redactor = Arc::new(Redactor::new(secrets.iter().enumerate().map(|(i, v)| {
            Secret {
                name: format!("BENCH_{i}_TOKEN"),
                value: v.clone(),
            }
        })));
        let filler = b"INFO request handled in 12 ms for /api/v1/items?page=3 by worker-7\n";
        let len = 100_000_000;
        let mut text: Vec<u8> = filler.iter().copied().cycle().take(len).collect();
        for i in 0..1000 {
            let at = (i * 2 + 1) * len / 2000;
            let s = secrets[i % 100].as_bytes();
            text[at..at + s.len()].copy_from_slice(s);
        }
        let mut times = Vec::new();
        for _ in 0..7 {
            let t0 = Instant::now();
            let mut stream = RedactStream::new(redactor.clone());
            let mut out = 0;
            for chunk in text.chunks(65536) {
                out += stream.push(chunk).len();
            }
            out += stream.finish().len();
            times.push(t0.elapsed().as_secs_f64());
            assert!(out > len / 2);
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        println!(
            "RedactStream, 100 secrets, 64 KiB chunks: {:.1} ms, {:.2} GB/s (median of 7)",
            median * 1e3,
            len as f64 / median / 1e9
        );
    }
}
