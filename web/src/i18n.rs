//! Every word the page shows, in English and in Chinese.
//!
//! A [`Text`] is a message key and its arguments; it is rendered in a [`Lang`] only when it is
//! shown, so the language can change while a run is on screen (the step log is kept as
//! texts, not as sentences). The words themselves are the [`catalogue`]: one entry per key with
//! both languages and `{name}` placeholders. An argument is plain (a label, a time) or another
//! key (a word that itself needs translating). Tests check that every entry has both
//! languages with the same placeholders, and that the page's components put no words of their
//! own on the page.

mod catalogue;

pub use catalogue::CATALOGUE;

use std::collections::HashMap;
use std::sync::OnceLock;

/// A language the page speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Lang {
    #[default]
    En,
    Zh,
}

impl Lang {
    /// Its code in the URL (`?lang=zh`).
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh",
        }
    }

    /// The language with this code (anything else is English).
    pub fn from_code(code: &str) -> Lang {
        match code {
            "zh" | "zh-CN" | "zh-cn" | "cn" => Lang::Zh,
            _ => Lang::En,
        }
    }

    /// Its code in an HTML `lang` attribute (what a browser picks fonts by).
    pub fn html_lang(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh-CN",
        }
    }

    /// The other one (the page's switch).
    pub fn other(self) -> Lang {
        match self {
            Lang::En => Lang::Zh,
            Lang::Zh => Lang::En,
        }
    }
}

/// One catalogue entry.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    pub key: &'static str,
    pub en: &'static str,
    /// Not in the page's build: there the Chinese arrive with [`load_zh`].
    #[cfg(not(target_arch = "wasm32"))]
    pub zh: &'static str,
}

/// The Chinese words the page loaded (`pkg/zh.json`), by key.
#[cfg(target_arch = "wasm32")]
static ZH: OnceLock<HashMap<&'static str, &'static str>> = OnceLock::new();

/// An entry's Chinese, if this build has it yet.
fn zh_of(e: &Entry) -> Option<&'static str> {
    #[cfg(not(target_arch = "wasm32"))]
    return Some(e.zh);
    #[cfg(target_arch = "wasm32")]
    return ZH.get().and_then(|m| m.get(e.key).copied());
}

/// Whether a language's words are here. English always is, and natively Chinese too; the page
/// loads Chinese when first asked for (until then it speaks English).
pub fn ready(lang: Lang) -> bool {
    #[cfg(target_arch = "wasm32")]
    if lang == Lang::Zh {
        return ZH.get().is_some();
    }
    let _ = lang;
    true
}

/// The language to draw in: `lang` once its words are here, English until then.
pub fn shown(lang: Lang) -> Lang {
    if ready(lang) {
        lang
    } else {
        Lang::En
    }
}

/// Chinese the page loaded that is not a catalogue entry (the glossary's: `glossary.<key>.…`).
#[cfg(target_arch = "wasm32")]
pub fn zh_word(key: &str) -> Option<&'static str> {
    ZH.get()?.get(key).copied()
}

/// The Chinese catalogue as the page loads it: a JSON object of key to words (the glossary's
/// entries too, as `glossary.<key>.title`, `.text` and `.form.<n>`).
#[cfg(not(target_arch = "wasm32"))]
pub fn zh_json() -> String {
    let mut map: std::collections::BTreeMap<String, &str> = CATALOGUE
        .iter()
        .map(|e| (e.key.to_string(), e.zh))
        .collect();
    for t in crate::glossary::TERMS {
        map.insert(format!("glossary.{}.title", t.key), t.zh_title);
        map.insert(format!("glossary.{}.text", t.key), t.zh_text);
        for (n, f) in t.zh_forms.iter().enumerate() {
            map.insert(format!("glossary.{}.form.{n}", t.key), f);
        }
    }
    let mut out = serde_json::to_string_pretty(&map).expect("strings serialise");
    out.push('\n');
    out
}

/// Take in the Chinese catalogue ([`zh_json`]'s form). It must have every key, with the same
/// `{places}` as the English; otherwise nothing is taken and the page stays in English.
/// (Natively, where the Chinese are built in, it only checks.)
pub fn load_zh(json: &str) -> Result<(), String> {
    let map: HashMap<String, String> =
        serde_json::from_str(json).map_err(|e| format!("zh.json: {e}"))?;
    for e in CATALOGUE {
        let zh = map
            .get(e.key)
            .ok_or_else(|| format!("zh.json has no {:?}", e.key))?;
        if placeholders(zh) != placeholders(e.en) {
            return Err(format!(
                "zh.json: {:?} has other places than English",
                e.key
            ));
        }
    }
    for t in crate::glossary::TERMS {
        for part in ["title", "text"] {
            let key = format!("glossary.{}.{part}", t.key);
            if !map.contains_key(&key) {
                return Err(format!("zh.json has no {key:?}"));
            }
        }
    }
    #[cfg(target_arch = "wasm32")]
    {
        // Kept for the page's life, as the English are.
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        let words = map.into_iter().map(|(k, v)| (leak(k), leak(v)));
        let _ = ZH.set(words.collect());
    }
    Ok(())
}

fn index() -> &'static HashMap<&'static str, &'static Entry> {
    static INDEX: OnceLock<HashMap<&'static str, &'static Entry>> = OnceLock::new();
    INDEX.get_or_init(|| CATALOGUE.iter().map(|e| (e.key, e)).collect())
}

/// Whether the catalogue has this key (or a module that loaded later brought it).
pub fn has(key: &str) -> bool {
    index().contains_key(key) || later(key).is_some()
}

/// Words that are not in the page's first load: the replication scenario's (its tour, its
/// summary) come with its module ([`load_later`]). Natively they are simply there.
#[cfg(target_arch = "wasm32")]
static LATER: OnceLock<HashMap<&'static str, (&'static str, &'static str)>> = OnceLock::new();

/// A later word's English and Chinese, if here.
fn later(key: &str) -> Option<(&'static str, &'static str)> {
    #[cfg(not(target_arch = "wasm32"))]
    return nsqlab_web_raft::words::word(key);
    #[cfg(target_arch = "wasm32")]
    return LATER.get().and_then(|m| m.get(key).copied());
}

/// Take in words a module brought (key, English, Chinese): kept for the page's life.
pub fn load_later(words: Vec<(String, String, String)>) {
    #[cfg(target_arch = "wasm32")]
    {
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        let _ = LATER.set(
            words
                .into_iter()
                .map(|(k, en, zh)| (leak(k), (leak(en), leak(zh))))
                .collect(),
        );
    }
    #[cfg(not(target_arch = "wasm32"))]
    let _ = words;
}

/// A key's words in a language, placeholders and all. A missing key fails in a debug build
/// (and `every_key_the_code_names_is_in_the_catalogue` keeps the code from naming one); in a
/// release build it shows as a plain marker, never as a blank or a bare `?`.
pub fn t(lang: Lang, key: &str) -> &'static str {
    match index().get(key) {
        Some(e) => match lang {
            Lang::En => e.en,
            Lang::Zh => zh_of(e).unwrap_or(e.en),
        },
        None => match later(key) {
            Some((en, zh)) => match lang {
                Lang::En => en,
                Lang::Zh => zh,
            },
            None => {
                debug_assert!(false, "no catalogue entry {key:?}");
                MISSING
            }
        },
    }
}

/// What a missing key shows in a release build (the test above keeps it from being reached).
const MISSING: &str = "[missing text]";

/// An argument of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// The same in every language (a label, a name, a number, a time).
    Plain(String),
    /// A word or phrase from the catalogue.
    Key(&'static str),
    /// A text of its own (a client's name).
    Text(Box<Text>),
    /// Words already rendered in each language (English, Chinese): the replication module's.
    Both(Box<(String, String)>),
}

/// Something to say: a catalogue key and its arguments, rendered when shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text {
    pub key: &'static str,
    pub args: Vec<(&'static str, Arg)>,
}

impl Text {
    pub fn new(key: &'static str) -> Text {
        debug_assert!(has(key), "no catalogue entry {key:?}");
        Text {
            key,
            args: Vec::new(),
        }
    }

    /// Add a plain argument.
    pub fn arg(mut self, name: &'static str, value: impl ToString) -> Text {
        self.args.push((name, Arg::Plain(value.to_string())));
        self
    }

    /// Add an argument that is itself a catalogue word.
    pub fn word(mut self, name: &'static str, key: &'static str) -> Text {
        debug_assert!(has(key), "no catalogue entry {key:?}");
        self.args.push((name, Arg::Key(key)));
        self
    }

    /// Add an argument that is a text of its own.
    pub fn nest(mut self, name: &'static str, text: Text) -> Text {
        self.args.push((name, Arg::Text(Box::new(text))));
        self
    }

    /// Words already rendered in English and in Chinese.
    pub fn both(en: String, zh: String) -> Text {
        Text {
            key: "sym.plain",
            args: vec![("s", Arg::Both(Box::new((en, zh))))],
        }
    }

    /// A name that is the same in every language.
    pub fn plain(s: impl ToString) -> Text {
        Text {
            key: "sym.plain",
            args: vec![("s", Arg::Plain(s.to_string()))],
        }
    }

    /// The text in a language.
    pub fn render(&self, lang: Lang) -> String {
        let s = fill(t(lang, self.key), lang, &self.args);
        match lang {
            Lang::En => s,
            Lang::Zh => tidy_cjk(&s),
        }
    }

    /// The text in English (what the tests read).
    pub fn en(&self) -> String {
        self.render(Lang::En)
    }
}

/// A text shows as its English (in logs and test messages).
impl std::fmt::Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.en())
    }
}

/// Put arguments into a template's `{name}` places.
fn fill(template: &str, lang: Lang, args: &[(&'static str, Arg)]) -> String {
    let mut out = String::with_capacity(template.len() + 32);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) => {
                let name = &after[..close];
                match args.iter().find(|(n, _)| *n == name) {
                    Some((_, Arg::Plain(v))) => out.push_str(v),
                    Some((_, Arg::Key(k))) => out.push_str(t(lang, k)),
                    Some((_, Arg::Text(x))) => out.push_str(&x.render(lang)),
                    Some((_, Arg::Both(b))) => out.push_str(match lang {
                        Lang::En => &b.0,
                        Lang::Zh => &b.1,
                    }),
                    None => {
                        out.push('{');
                        out.push_str(name);
                        out.push('}');
                    }
                }
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

pub use nsqlab_web_raft::words::{placeholders, tidy_cjk};

/// Whether a string has Chinese characters.
pub fn has_cjk(s: &str) -> bool {
    s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    /// The page loads its Chinese from `www/pkg/zh.json`: the committed file is this catalogue's,
    /// and it is taken in whole.
    #[test]
    fn the_chinese_the_page_loads_are_the_catalogues() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../www/pkg/zh.json");
        let committed = std::fs::read_to_string(path).expect("www/pkg/zh.json");
        assert!(
            committed == zh_json(),
            "www/pkg/zh.json is not this catalogue's: run 'bash scripts/build-web.sh'"
        );
        load_zh(&committed).unwrap();
    }

    /// A catalogue with a key missing, or with other places, is refused whole.
    #[test]
    fn a_chinese_catalogue_that_does_not_fit_is_refused() {
        let mut map: std::collections::BTreeMap<String, String> =
            serde_json::from_str(&zh_json()).unwrap();
        let full = map.clone();
        map.remove("ui.publish");
        let e = load_zh(&serde_json::to_string(&map).unwrap()).unwrap_err();
        assert!(e.contains("ui.publish"), "{e}");
        let mut map = full;
        let (k, v) = map
            .iter_mut()
            .find(|(_, v)| v.contains('{'))
            .expect("a template with places");
        let k = k.clone();
        *v = v.replacen('{', "{x", 1);
        let e = load_zh(&serde_json::to_string(&map).unwrap()).unwrap_err();
        assert!(e.contains(&k), "{e}");
        assert!(load_zh("[1, 2]").is_err());
    }

    /// Every key the code names is in the catalogue (and so, by the test below, in both
    /// languages): the literal in `t(_, "…")`, `Text::new("…")`, `.word(_, "…")`, `has("…")`,
    /// and every literal shaped like a key (`a.b-c`), such as one handed to a helper that calls
    /// `t`. Keys made at run time are checked where they are made (tours, algo blocks).
    #[test]
    fn every_key_the_code_names_is_in_the_catalogue() {
        const NOT_KEYS: &[&str] = &["nsqlab-run.json"];
        let mut todo = vec![std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src"
        ))];
        let (mut missing, mut named_keys) = (Vec::new(), 0);
        while let Some(p) = todo.pop() {
            if p.is_dir() {
                todo.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") || p.ends_with("i18n/catalogue.rs") {
                continue;
            }
            let code = std::fs::read_to_string(&p).unwrap();
            for (at, lit) in literals(&code) {
                let named = names_a_key(&code[..at]) || looks_like_key(lit);
                // A tour stop's prefix (`heap.push`) names a family of keys.
                let family = CATALOGUE
                    .iter()
                    .any(|e| e.key.starts_with(&format!("{lit}.")));
                if named && has(lit) {
                    named_keys += 1;
                }
                if named && !has(lit) && !family && !NOT_KEYS.contains(&lit) {
                    let line = code[..at].matches('\n').count() + 1;
                    missing.push(format!("{}:{line}: {lit:?}", p.display()));
                }
            }
        }
        assert!(
            named_keys > 200,
            "only {named_keys} keys found: is the scan broken?"
        );
        assert!(
            missing.is_empty(),
            "keys not in the catalogue:\n{}",
            missing.join("\n")
        );
    }

    /// The scan itself: a missing key is caught in each form a component names one.
    #[test]
    fn the_key_scan_sees_each_way_of_naming_a_key() {
        let code = r#"t(l, "ui.nope"); Text::new("fin"); x.word("w", "a.b"); has("c"); "d.e-f";"#;
        let found: Vec<&str> = literals(code)
            .into_iter()
            .filter(|(at, lit)| names_a_key(&code[..*at]) || looks_like_key(lit))
            .map(|(_, lit)| lit)
            .collect();
        // (Joined, so that this test's own literals do not look like keys to the scan.)
        assert_eq!(found.join(" "), "ui.nope fin a.b c d.e-f");
        assert!(!looks_like_key("Hello world."));
    }

    fn looks_like_key(s: &str) -> bool {
        s.starts_with(|c: char| c.is_ascii_lowercase())
            && s.contains('.')
            && s.split('.').all(|p| {
                !p.is_empty()
                    && p.chars().all(|c| {
                        c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_'
                    })
            })
    }

    /// The code before a literal ends in a call that takes a key there.
    fn names_a_key(before: &str) -> bool {
        let b = before.trim_end();
        let called = |b: &str, f: &str| {
            b.strip_suffix(f)
                .is_some_and(|x| !x.ends_with(|c: char| c.is_alphanumeric() || c == '_'))
        };
        if called(b, "Text::new(") || called(b, "has(") {
            return true;
        }
        // The second argument of `t(lang, "…")` or `.word("name", "…")`.
        let Some(b) = b.strip_suffix(',') else {
            return false;
        };
        let Some(open) = b.rfind('(') else {
            return false;
        };
        let simple = !b[open + 1..].contains(['(', ')', ',']);
        simple && (called(&b[..=open], "t(") || b[..=open].ends_with(".word("))
    }

    /// Rust source's string literals and where each starts (comments, char literals and
    /// lifetimes passed over).
    fn literals(code: &str) -> Vec<(usize, &str)> {
        let b = code.as_bytes();
        let (mut i, mut out) = (0, Vec::new());
        while i < b.len() {
            match b[i] {
                b'/' if b.get(i + 1) == Some(&b'/') => {
                    i = code[i..].find('\n').map_or(b.len(), |n| i + n)
                }
                b'/' if b.get(i + 1) == Some(&b'*') => {
                    i = code[i + 2..].find("*/").map_or(b.len(), |n| i + n + 4)
                }
                b'r' if (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
                    && matches!(b.get(i + 1), Some(b'"' | b'#')) =>
                {
                    let h = code[i + 1..].bytes().take_while(|&c| c == b'#').count();
                    if b.get(i + 1 + h) != Some(&b'"') {
                        i += 1;
                        continue;
                    }
                    let (start, end_pat) = (i + h + 2, format!("\"{}", "#".repeat(h)));
                    let end = code[start..].find(&end_pat).map_or(b.len(), |n| start + n);
                    out.push((i, &code[start..end]));
                    i = end + end_pat.len();
                }
                b'"' => {
                    let mut j = i + 1;
                    while j < b.len() && b[j] != b'"' {
                        j += if b[j] == b'\\' { 2 } else { 1 };
                    }
                    out.push((i, &code[i + 1..j.min(b.len())]));
                    i = j + 1;
                }
                b'\'' => {
                    if b.get(i + 1) == Some(&b'\\') {
                        i = code[i + 2..].find('\'').map_or(b.len(), |n| i + n + 3);
                    } else {
                        let n = code[i + 1..].chars().next().map_or(1, char::len_utf8);
                        // A char literal, else a lifetime.
                        i += if b.get(i + 1 + n) == Some(&b'\'') {
                            n + 2
                        } else {
                            1
                        };
                    }
                }
                _ => i += 1,
            }
        }
        out
    }

    /// Every entry exists in both languages, with the same placeholders, and the Chinese is
    /// Chinese (not the English left in place).
    #[test]
    fn every_entry_is_in_both_languages() {
        let mut seen = std::collections::HashSet::new();
        for e in CATALOGUE {
            assert!(seen.insert(e.key), "{} twice", e.key);
            assert!(!e.en.trim().is_empty(), "{}: no English", e.key);
            assert!(!e.zh.trim().is_empty(), "{}: no Chinese", e.key);
            assert_eq!(
                placeholders(e.en),
                placeholders(e.zh),
                "{}: the placeholders differ",
                e.key
            );
            // Letters outside placeholders, commands and flags make it words to translate.
            let mut bare = e.en.to_string();
            for p in placeholders(e.en) {
                bare = bare.replace(&format!("{{{p}}}"), "");
            }
            let words = bare
                .split_whitespace()
                .filter(|w| w.chars().filter(|c| c.is_ascii_lowercase()).count() > 2)
                .count();
            if words > 0 && !e.key.starts_with("sym.") {
                assert!(
                    has_cjk(e.zh),
                    "{}: the Chinese is not Chinese: {}",
                    e.key,
                    e.zh
                );
            }
        }
    }

    /// The components put no words of their own on the page: every word comes from the
    /// catalogue. A literal text node, a literal `title`/`aria-label`, or a `format!` string
    /// with a word in it (outside its placeholders, and not a style, a URL or an id) fails.
    #[test]
    fn the_components_say_nothing_of_their_own() {
        // Every file of the components (src/app and below).
        let mut sources = Vec::new();
        let mut todo = vec![std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/app"
        ))];
        while let Some(p) = todo.pop() {
            if p.is_dir() {
                todo.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            } else if p.extension().is_some_and(|x| x == "rs") {
                let name = p.display().to_string();
                sources.push((name, std::fs::read_to_string(&p).unwrap()));
            }
        }
        assert!(sources.len() >= 15, "{} component files", sources.len());
        // Words that are not to be translated: the product's name, units, symbols.
        let allowed = ["nsqlab"];
        let technical = [
            "translate",
            "transform",
            "width",
            "height",
            "top:",
            "--h",
            "px",
            "#g-",
            "?mode=",
            "?scenario=",
            "ease",
            "none",
            "duration",
            "easing",
            "cancel",
            "animate",
            "data-",
            "keydown",
            "resize",
            "Escape",
            "Arrow",
            "/api/",
            "/ws/",
            "-refusal",
            "left:",
            "algo.",
            "tour.",
            "#run=",
            "hsl(",
        ];
        let word = |lit: &str| {
            let mut bare = lit.to_string();
            for p in placeholders(lit) {
                bare = bare.replace(&format!("{{{p}}}"), "");
            }
            bare.split(|c: char| !c.is_ascii_alphabetic())
                .any(|w| w.len() >= 3 && !allowed.contains(&w))
        };
        let mut bad = Vec::new();
        for (file, src) in sources {
            for (n, line) in src.lines().enumerate() {
                let code = line.trim_start();
                if code.starts_with("//") {
                    continue;
                }
                let mut checks = Vec::new();
                for opener in [
                    "{\"",
                    "title=\"",
                    "aria-label=\"",
                    "placeholder=\"",
                    "alt=\"",
                    "format!(\"",
                ] {
                    let mut rest = code;
                    while let Some(i) = rest.find(opener) {
                        let after = &rest[i + opener.len()..];
                        let end = after.find('"').unwrap_or(after.len());
                        checks.push((opener, &after[..end]));
                        rest = &after[end..];
                    }
                }
                for (opener, lit) in checks {
                    let skip = opener == "format!(\""
                        && technical
                            .iter()
                            .any(|t| lit.contains(t) || code.contains(t));
                    if !skip && word(lit) {
                        bad.push(format!("{file}:{}: {lit:?}", n + 1));
                    }
                }
            }
        }
        assert!(
            bad.is_empty(),
            "words that are not in the catalogue:\n{}",
            bad.join("\n")
        );
    }

    #[test]
    fn texts_render_in_each_language() {
        let x = Text::new("heap.take.only").arg("label", "order 3");
        assert_eq!(
            x.en(),
            "Pop: order 3 leaves the heap. It was the only entry, so the heap is now empty."
        );
        assert!(x.render(Lang::Zh).contains("order 3"));
        assert!(has_cjk(&x.render(Lang::Zh)));
        assert_eq!(Lang::from_code("zh"), Lang::Zh);
        assert_eq!(Lang::from_code("de"), Lang::En);
        assert_eq!(
            fill("{a} and {b}", Lang::En, &[("a", Arg::Plain("x".into()))]),
            "x and {b}"
        );
    }
}
