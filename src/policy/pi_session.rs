//! Where pi keeps its session transcripts. pi itself says so best: the extension passes
//! `ctx.sessionManager`'s folder and file. Without pi (the CLI), and for where pi would put
//! the next session, it is resolved as pi resolves it: `$PI_CODING_AGENT_SESSION_DIR`, else
//! `sessionDir` of the agent dir's `settings.json` merged with the project's
//! `.pi/settings.json`, else pi's per-project folder in the agent dir. The settings are read
//! as pi 0.87 reads them (`JSON.parse`, then its merge); `__test__/session-dir.test.mjs`
//! compares this with pi's own `SettingsManager`, on both pi versions.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::paths::lexical_normalize;

/// A settings file pi reads whole; a bigger one (or one that is not a regular file: a FIFO
/// would block) is taken as unreadable, which pi's loader turns into `{}` as well.
const MAX_SETTINGS_BYTES: u64 = 4 << 20;

/// A `sessionDir` value as JavaScript sees it: pi tests it for truth, then uses it as a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Setting {
    Text(String),
    /// `null`, `false`, `0`, `""`: pi uses its default folder.
    Falsy,
    /// Any other non-string: pi stops at start-up (`startsWith` is not a function).
    Truthy,
}

/// What one settings file says, as far as `sessionDir` goes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Layer {
    /// `sessionDir` as an own key (the last one, as `JSON.parse` keeps the last duplicate).
    own: Option<Setting>,
    /// Whether the file has an own `__proto__` key at all.
    has_proto_key: bool,
    /// The last `__proto__` value, when it is an object: pi's merge assigns it to
    /// `result.__proto__`, making it the prototype `sessionDir` is looked up in.
    proto: Option<Box<Layer>>,
}

/// `sessionDir` of the merged settings (pi 0.87's `deepMergeObjects(global, project)`): the
/// project's own key, else the global's; else, when only the project has a `__proto__`
/// object, that object's key, else its own `__proto__` object's (the prototype chain the
/// assignment builds; a global `__proto__` is copied by the spread as a plain key instead).
pub(crate) fn merged(global: &Layer, project: &Layer) -> Option<Setting> {
    if let Some(s) = project.own.as_ref().or(global.own.as_ref()) {
        return Some(s.clone());
    }
    if global.has_proto_key {
        return None;
    }
    let proto = project.proto.as_deref()?;
    proto
        .own
        .clone()
        .or_else(|| proto.proto.as_deref().and_then(|p| p.own.clone()))
}

/// One settings file's text as pi 0.87 reads it: a leading BOM dropped, then `JSON.parse`;
/// text that does not parse, or is not an object, counts as `{}`.
pub(crate) fn parse_layer(text: &str) -> Layer {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut de = serde_json::Deserializer::from_str(text);
    match LayerSeed(0)
        .deserialize(&mut de)
        .and_then(|l| de.end().map(|_| l))
    {
        Ok(layer) => layer.unwrap_or_default(),
        Err(_) => Layer::default(),
    }
}

/// Reads `file` as pi does (`readFileSync(path, "utf-8")`: invalid UTF-8 becomes U+FFFD);
/// absent, unreadable or not a regular file is `{}`.
fn read_layer(file: &Path) -> Layer {
    let Ok(f) = open_nonblocking(file) else {
        return Layer::default();
    };
    if !f
        .metadata()
        .is_ok_and(|m| m.is_file() && m.len() <= MAX_SETTINGS_BYTES)
    {
        return Layer::default();
    }
    let mut bytes = Vec::new();
    if f.take(MAX_SETTINGS_BYTES + 1)
        .read_to_end(&mut bytes)
        .is_err()
    {
        return Layer::default();
    }
    parse_layer(&String::from_utf8_lossy(&bytes))
}

/// The folder pi, started in `cwd`, keeps this session's transcripts in when it is not pi's
/// per-project folder in the agent dir: `var` (`$PI_CODING_AGENT_SESSION_DIR`) when set,
/// else the settings' `sessionDir`. None: pi's default folder (or pi would not start).
pub(crate) fn configured_dir(
    var: Option<&str>,
    home: &Path,
    agent_dir: &Path,
    cwd: &Path,
) -> Option<PathBuf> {
    let setting = match var.filter(|v| !v.is_empty()) {
        Some(v) => Setting::Text(v.to_string()),
        None => merged(
            &read_layer(&agent_dir.join("settings.json")),
            &read_layer(&cwd.join(".pi").join("settings.json")),
        )?,
    };
    match setting {
        Setting::Text(s) if !s.is_empty() => pi_path(&s, home, cwd),
        _ => None,
    }
}

/// A session dir string as pi 0.87 uses it (`normalizePath`: `~` and `~/x` from home, a
/// `file://` URL as its path), made absolute against pi's cwd as the kernel does with a
/// relative one (`path.resolve`). None where pi would stop (a NUL byte, a URL it refuses)
/// or where the URL takes more than a plain path to read.
pub(crate) fn pi_path(s: &str, home: &Path, cwd: &Path) -> Option<PathBuf> {
    if s.contains('\0') {
        return None;
    }
    let path = if s == "~" {
        home.to_path_buf()
    } else if let Some(rest) = s.strip_prefix("~/") {
        // node's `join(home, rest)`: a rest starting with `/` still lands under home.
        home.join(rest.trim_start_matches('/'))
    } else if let Some(url) = s.strip_prefix("file://") {
        file_url_path(url)?
    } else {
        PathBuf::from(s)
    };
    Some(lexical_normalize(&cwd.join(path)))
}

/// The path of a plain `file://` URL (what follows the scheme), as node's `fileURLToPath`
/// gives it: an empty or `localhost` host, an absolute path. Anything the URL parser would
/// rewrite (escapes, queries, fragments, backslashes, controls, spaces, drive letters) is
/// None: not worth parsing URLs for.
fn file_url_path(url: &str) -> Option<PathBuf> {
    let slash = url.find('/')?;
    let (host, path) = url.split_at(slash);
    if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
        return None;
    }
    let odd = |b: u8| matches!(b, b'%' | b'?' | b'#' | b'\\' | b'|') || b <= b' ' || b == 0x7f;
    if path.bytes().any(odd) {
        return None;
    }
    let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
    if first.len() == 2 && first.ends_with(':') {
        return None;
    }
    Some(PathBuf::from(path))
}

/// `JSON.parse`'s reading of an object, kept to what `merged` needs. Depth 0 is the file, 1
/// its `__proto__`, 2 that one's; deeper ones pi's merge never looks up.
struct LayerSeed(u8);

impl<'de> DeserializeSeed<'de> for LayerSeed {
    type Value = Option<Layer>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Layer>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for LayerSeed {
    type Value = Option<Layer>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Layer>, A::Error> {
        let mut layer = Layer::default();
        // Keys as bytes: JSON.parse takes lone surrogates in keys, a Rust string would not.
        while let Some(key) = map.next_key_seed(Bytes)? {
            match key.as_slice() {
                b"sessionDir" => {
                    let raw: &RawValue = map.next_value()?;
                    layer.own = Some(setting(raw.get()));
                }
                b"__proto__" => {
                    layer.has_proto_key = true;
                    let raw: &RawValue = map.next_value()?;
                    layer.proto = match self.0 < 2 && raw.get().starts_with('{') {
                        true => parse_nested(raw.get(), self.0 + 1).map(Box::new),
                        false => None,
                    };
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some(layer))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Layer>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Option<Layer>, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Option<Layer>, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Option<Layer>, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Option<Layer>, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Option<Layer>, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Option<Layer>, E> {
        Ok(None)
    }
}

/// A nested object (already validated as part of its file).
fn parse_nested(raw: &str, depth: u8) -> Option<Layer> {
    let mut de = serde_json::Deserializer::from_str(raw);
    LayerSeed(depth).deserialize(&mut de).ok().flatten()
}

/// A `sessionDir` value from its JSON text, judged for truth as JavaScript does.
fn setting(raw: &str) -> Setting {
    let raw = raw.trim();
    match raw.as_bytes().first() {
        Some(b'"') => {
            let mut de = serde_json::Deserializer::from_str(raw);
            match de.deserialize_bytes(Bytes) {
                Ok(b) if b.is_empty() => Setting::Falsy,
                Ok(b) => Setting::Text(from_wtf8(&b)),
                Err(_) => Setting::Truthy,
            }
        }
        Some(b'n' | b'f') => Setting::Falsy,
        Some(b't' | b'{' | b'[') => Setting::Truthy,
        // A number: falsy when it is zero (`1e-400` too, as a double).
        _ => match raw.parse::<f64>() {
            Ok(0.0) => Setting::Falsy,
            _ => Setting::Truthy,
        },
    }
}

/// A JSON string as serde_json's raw reading gives it (WTF-8: a lone surrogate escape is
/// kept as its 3 bytes) turned into what node makes of such a string as a path: U+FFFD
/// for each lone surrogate.
fn from_wtf8(bytes: &[u8]) -> String {
    let mut out = String::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let surrogate = rest.len() >= 3 && rest[0] == 0xED && (0xA0..=0xBF).contains(&rest[1]);
        if surrogate {
            out.push('\u{FFFD}');
            rest = &rest[3..];
            continue;
        }
        let end = (1..rest.len())
            .find(|&i| rest[i] == 0xED)
            .unwrap_or(rest.len());
        out.push_str(&String::from_utf8_lossy(&rest[..end]));
        rest = &rest[end..];
    }
    out
}

/// Deserializes a JSON string (or key) as its bytes.
struct Bytes;

impl<'de> DeserializeSeed<'de> for Bytes {
    type Value = Vec<u8>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<u8>, D::Error> {
        d.deserialize_bytes(self)
    }
}

impl<'de> Visitor<'de> for Bytes {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string")
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<Vec<u8>, E> {
        Ok(v.to_vec())
    }
    fn visit_str<E>(self, v: &str) -> Result<Vec<u8>, E> {
        Ok(v.as_bytes().to_vec())
    }
}

/// A transcript's first line is pi's header; more than this before a newline is no header.
const MAX_HEADER_BYTES: usize = 64 << 10;

/// Opens `path` for reading without waiting on it: a FIFO where a file is expected must not
/// stop the session (its metadata then says it is no regular file).
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// What keeps pi's session folders (`dirs`, as pi names them) from being changed by the
/// agent (`Place::SessionDir`): each folder (canonical), every symlink on the way to it and,
/// for a folder not made yet, the first missing directory on the way (made as a link by a
/// command, it would send pi's appends elsewhere). A folder holding a tree the agent may
/// write (`writable`, canonical: the project, allowWrite roots) cannot be kept whole: there
/// the live transcript `file` is, and the links on its way.
pub(crate) fn protected_places(
    dirs: &[PathBuf],
    file: Option<&Path>,
    writable: &[PathBuf],
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in dirs {
        let (real, links) = followed(dir);
        if writable
            .iter()
            .any(|w| crate::policy::protected::is_under(w, &real))
        {
            if let Some((f, links)) = file.map(followed) {
                if f.parent() == Some(real.as_path()) {
                    out.push(f);
                    out.extend(links);
                }
            }
            continue;
        }
        // (Not one that would hold a writable tree: that one exists.)
        keep_with_way(real, links, writable, &mut out);
    }
    out.sort();
    out.dedup();
    out
}

/// `path` followed through its links as far as it exists, and the links followed.
pub(crate) fn followed(path: &Path) -> (PathBuf, Vec<PathBuf>) {
    crate::paths::symlinks_followed(path).unwrap_or_else(|_| (lexical_normalize(path), vec![]))
}

/// A place pi reads or writes on the host, kept with its way: `real` (a path `followed`),
/// the `links` followed to it, and while it is not made yet, the first missing folder on
/// the way (made as a link by a command, it would send pi elsewhere) unless that folder
/// would hold a writable tree.
pub(crate) fn keep_with_way(
    real: PathBuf,
    links: Vec<PathBuf>,
    writable: &[PathBuf],
    out: &mut Vec<PathBuf>,
) {
    let missing = crate::paths::first_missing_ancestor(&real).filter(|m| {
        !writable
            .iter()
            .any(|w| crate::policy::protected::is_under(w, m))
    });
    out.extend(missing);
    out.push(real);
    out.extend(links);
}

/// The transcripts in pi's session folders `dirs` (not its per-project folder in the agent
/// dir) that the agent may not read. A folder outside the project is pi's shared one: every
/// project's transcripts, new ones arriving while this session runs; it is hidden whole. One
/// inside the project (a relative `sessionDir`), or holding the project or the home, is
/// listed now: each transcript whose header does not name this project is hidden. `cwd` and
/// `home` canonical (pi writes its cwd as the kernel gives it: canonical).
pub(crate) fn hidden_transcripts(dirs: &[PathBuf], cwd: &Path, home: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(real) = crate::paths::canonicalize(dir) else {
            continue;
        };
        let listed = crate::policy::protected::is_under(&real, cwd)
            || crate::policy::protected::is_under(cwd, &real)
            || crate::policy::protected::is_under(home, &real);
        if !listed {
            out.push(real);
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&real) else {
            continue;
        };
        out.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .filter(|p| !header_names(p, cwd)),
        );
    }
    out.sort();
    out.dedup();
    out
}

/// Whether `transcript` is a regular file whose first line is pi's session header naming
/// `cwd` (pi's `sessionCwdMatches`). Anything else (a link, a FIFO, no header) is not
/// known to be this project's.
fn header_names(transcript: &Path, cwd: &Path) -> bool {
    #[derive(serde::Deserialize)]
    struct Header {
        #[serde(rename = "type")]
        kind: String,
        cwd: String,
    }
    if !std::fs::symlink_metadata(transcript).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let Ok(f) = open_nonblocking(transcript) else {
        return false;
    };
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut head = Vec::new();
    if f.take(MAX_HEADER_BYTES as u64)
        .read_to_end(&mut head)
        .is_err()
    {
        return false;
    }
    let Some(line) = head.split(|&b| b == b'\n').next() else {
        return false;
    };
    match serde_json::from_slice::<Header>(line) {
        Ok(h) => {
            h.kind == "session"
                && Path::new(&h.cwd).is_absolute()
                && lexical_normalize(Path::new(&h.cwd)) == cwd
        }
        Err(_) => false,
    }
}

#[cfg(test)]
#[path = "pi_session_tests.rs"]
mod tests;
