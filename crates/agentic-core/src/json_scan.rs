//! A strict, allocation-free scanner for the JSON that machines write, one record per line.
//!
//! It accepts a *subset* of JSON (no raw control characters in strings, escapes other than
//! surrogate `\uD800`-`\uDFFF`, integers and fractions of at most 15 digits without an
//! exponent, nesting up to [`MAX_DEPTH`]) and answers `None` for everything else. A caller
//! then falls back to `serde_json`, so the scanner can never accept what `serde_json` rejects;
//! it only makes the common case fast. Whitespace is space, tab and carriage return: a line
//! feed ends a line, so a scan never crosses one.
//!
//! The input is bytes of valid UTF-8 (checked by the caller): bytes of 0x80 and above are
//! taken as they come inside strings and rejected anywhere else.

use std::ops::Range;

/// The deepest nesting the scanner follows (`serde_json` allows 128).
pub const MAX_DEPTH: usize = 100;

/// The most keys of one object [`JsonScanner::value`] compares for repeats; wider objects
/// are left to the full parse.
pub const MAX_COMPARED_KEYS: usize = 16;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Eight bytes from `pos`, when there are eight.
#[inline(always)]
fn word(bytes: &[u8], pos: usize) -> Option<u64> {
    let chunk: &[u8; 8] = bytes.get(pos..pos.wrapping_add(8))?.try_into().ok()?;
    Some(u64::from_le_bytes(*chunk))
}

/// The high bit of every byte of `word` that is `"`, `\` or a control character (below
/// 0x20). The classic "has zero byte" / "has byte less than" tricks: the lowest flagged byte
/// is always a true hit; false hits can only follow it.
#[inline(always)]
fn specials(word: u64) -> u64 {
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    ((quote.wrapping_sub(ONES) & !quote)
        | (backslash.wrapping_sub(ONES) & !backslash)
        | (word.wrapping_sub(ONES * 0x20) & !word))
        & HIGH
}

/// `a == b` for the short byte strings of a trace (names, ids, separators) without a call to
/// `memcmp`, whose setup costs more than the comparison at these lengths.
#[inline(always)]
pub fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |bytes: &[u8], at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default());
    let half = |bytes: &[u8], at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or_default());
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        17..=32 => {
            word(a, 0) == word(b, 0)
                && word(a, 8) == word(b, 8)
                && word(a, n - 16) == word(b, n - 16)
                && word(a, n - 8) == word(b, n - 8)
        }
        _ => a == b,
    }
}

/// One bit per byte of `chunk` (16 bytes) that is `"`, `\` or a control character, and one
/// per `"`.
#[inline(always)]
fn specials16(chunk: &[u8]) -> (u32, u32) {
    let Ok(chunk) = <[u8; 16]>::try_from(chunk) else { return (1, 0) };
    let bytes = wide::u8x16::new(chunk);
    let quote = bytes.simd_eq(wide::u8x16::splat(b'"'));
    let backslash = bytes.simd_eq(wide::u8x16::splat(b'\\'));
    let control = bytes.min(wide::u8x16::splat(0x1f)).simd_eq(bytes);
    ((quote | backslash | control).to_bitmask(), quote.to_bitmask())
}

/// A cursor over JSON bytes; see the module documentation for what it accepts.
#[derive(Debug, Clone)]
pub struct JsonScanner<'a> {
    bytes: &'a [u8],
    pos: usize,
}

/// The keys of one object seen so far (at most [`MAX_COMPARED_KEYS`], as `u32` ranges: it is
/// set up for every object scanned, so it stays small), to find a repeat.
#[derive(Debug, Default)]
pub struct KeySet {
    keys: [(u32, u32); MAX_COMPARED_KEYS],
    count: usize,
}

impl KeySet {
    /// Adds the key at `key` in `bytes`; false when it was seen already, or when the set is
    /// full (the caller leaves the object to the full parse then).
    #[inline(always)]
    pub fn first_time(&mut self, bytes: &[u8], key: Range<usize>) -> bool {
        let (Ok(start), Ok(end)) = (u32::try_from(key.start), u32::try_from(key.end)) else { return false };
        let Some(text) = bytes.get(key) else { return false };
        if self.count == MAX_COMPARED_KEYS
            || self.keys[..self.count].iter().any(|&(s, e)| bytes_eq(&bytes[s as usize..e as usize], text))
        {
            return false;
        }
        self.keys[self.count] = (start, end);
        self.count += 1;
        true
    }
}

impl<'a> JsonScanner<'a> {
    /// A scanner at `pos` of `bytes`.
    pub fn new(bytes: &'a [u8], pos: usize) -> JsonScanner<'a> {
        JsonScanner { bytes, pos }
    }

    /// The bytes scanned.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The current position.
    #[inline(always)]
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Moves `count` bytes on.
    #[inline(always)]
    pub fn advance(&mut self, count: usize) {
        self.pos += count;
    }

    /// The byte at the position; 0 at the end (a byte JSON never has outside strings).
    #[inline(always)]
    pub fn peek(&self) -> u8 {
        self.bytes.get(self.pos).copied().unwrap_or(0)
    }

    /// True at the end of the bytes.
    pub fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    /// Skips spaces, tabs and carriage returns (never a line feed).
    #[inline(always)]
    pub fn ws(&mut self) {
        if self.peek() > b' ' {
            return;
        }
        self.ws_slow();
    }

    #[inline(never)]
    fn ws_slow(&mut self) {
        while matches!(self.peek(), b' ' | b'\t' | b'\r') {
            self.pos += 1;
        }
    }

    /// Consumes `byte`, or fails.
    #[inline(always)]
    pub fn eat(&mut self, byte: u8) -> Option<()> {
        if self.peek() == byte {
            self.pos += 1;
            Some(())
        } else {
            None
        }
    }

    /// A string from its opening quote: the range of its content and whether it has escapes.
    #[inline(always)]
    pub fn string(&mut self) -> Option<(Range<usize>, bool)> {
        self.eat(b'"')?;
        let start = self.pos;
        let (end, escaped) = self.string_tail()?;
        Some((start..end, escaped))
    }

    /// The rest of a string whose opening quote was consumed: moves past the closing quote
    /// and returns where the content ends and whether it has escapes.
    #[inline(always)]
    pub fn string_tail(&mut self) -> Option<(usize, bool)> {
        let mut escaped = false;
        loop {
            // Sixteen bytes at a time (SSE2 on x86-64), eight near the end.
            if let Some(chunk) = self.bytes.get(self.pos..self.pos + 16) {
                let (hits, quotes) = specials16(chunk);
                if hits == 0 {
                    self.pos += 16;
                    continue;
                }
                let first = hits.trailing_zeros();
                self.pos += first as usize;
                // The usual end: the first special byte is the closing quote (known from the
                // masks, without reading the byte again).
                if quotes >> first & 1 == 1 {
                    let end = self.pos;
                    self.pos += 1;
                    return Some((end, escaped));
                }
            } else if let Some(word) = word(self.bytes, self.pos) {
                let hits = specials(word);
                if hits == 0 {
                    self.pos += 8;
                    continue;
                }
                self.pos += (hits.trailing_zeros() / 8) as usize;
            }
            match self.peek() {
                b'"' => {
                    let end = self.pos;
                    self.pos += 1;
                    return Some((end, escaped));
                }
                b'\\' => {
                    escaped = true;
                    self.escape()?;
                }
                0..=0x1f => return None,
                _ => self.pos += 1,
            }
        }
    }

    /// One escape sequence at a backslash.
    #[cold]
    fn escape(&mut self) -> Option<()> {
        match *self.bytes.get(self.pos + 1)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.pos += 2,
            b'u' => {
                let hex = self.bytes.get(self.pos + 2..self.pos + 6)?;
                // Surrogates need pairing rules: leave them to serde_json.
                if !hex.iter().all(u8::is_ascii_hexdigit) || matches!(hex[0], b'd' | b'D') {
                    return None;
                }
                self.pos += 6;
            }
            _ => return None,
        }
        Some(())
    }

    /// Exactly `literal`.
    #[inline(always)]
    pub fn literal(&mut self, literal: &[u8]) -> Option<()> {
        if self.bytes.get(self.pos..self.pos + literal.len())? == literal {
            self.pos += literal.len();
            Some(())
        } else {
            None
        }
    }

    /// A number of the accepted form.
    fn number(&mut self) -> Option<()> {
        if self.peek() == b'-' {
            self.pos += 1;
        }
        let first = self.pos;
        while self.peek().is_ascii_digit() {
            self.pos += 1;
        }
        let digits = self.pos - first;
        if digits == 0 || digits > 15 || (digits > 1 && self.bytes[first] == b'0') {
            return None;
        }
        if self.peek() == b'.' {
            self.pos += 1;
            let fraction = self.pos;
            while self.peek().is_ascii_digit() {
                self.pos += 1;
            }
            if self.pos == fraction || self.pos - fraction > 15 {
                return None;
            }
        }
        // Exponents (and so numbers out of range) are left to serde_json.
        if matches!(self.peek(), b'e' | b'E') {
            return None;
        }
        Some(())
    }

    /// Any value at nesting `depth` (the top level is 0). An object that repeats a key (or
    /// has escaped keys, or more than [`MAX_COMPARED_KEYS`]) is refused.
    pub fn value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek() {
            b'"' => {
                self.pos += 1;
                self.string_tail().map(|_| ())
            }
            b'{' => {
                self.pos += 1;
                self.object(depth)
            }
            b'[' => {
                self.pos += 1;
                self.ws();
                if self.eat(b']').is_some() {
                    return Some(());
                }
                loop {
                    self.ws();
                    self.value(depth + 1)?;
                    self.ws();
                    match self.peek() {
                        b',' => self.pos += 1,
                        b']' => {
                            self.pos += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.number(),
        }
    }

    /// An object whose `{` was consumed, up to and including its `}`, at nesting `depth`. A
    /// key repeated in it is left to the full parse, which refuses it (a record must not mean
    /// two things); so are escaped keys, which could spell a repeat differently, and objects
    /// with more than [`MAX_COMPARED_KEYS`] keys.
    #[inline(always)]
    pub fn object(&mut self, depth: usize) -> Option<()> {
        let bytes = self.bytes;
        let mut keys = KeySet::default();
        self.members(depth, |key, escaped, _| !escaped && keys.first_time(bytes, key))
    }

    /// The members of an object whose `{` was consumed, up to and including its `}`, at
    /// nesting `depth`. `member(key, escaped, value)` sees each member's key range, whether the
    /// key has escapes, and its value; returning false stops the scan with `None`.
    #[inline(always)]
    pub fn members(&mut self, depth: usize, mut member: impl FnMut(Range<usize>, bool, Scanned) -> bool) -> Option<()> {
        self.ws();
        if self.peek() == b'}' {
            self.pos += 1;
            return Some(());
        }
        loop {
            let (key, escaped) = self.string()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            let start = self.pos;
            let value_escaped = if self.peek() == b'"' {
                self.pos += 1;
                self.string_tail()?.1
            } else {
                self.value(depth + 1)?;
                false
            };
            if !member(key, escaped, Scanned { range: start..self.pos, escaped: value_escaped }) {
                return None;
            }
            self.ws();
            match self.peek() {
                b',' => {
                    self.pos += 1;
                    self.ws();
                }
                b'}' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}

/// A value the scanner read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scanned {
    /// Its raw text (a string with its quotes).
    pub range: Range<usize>,
    /// A string with escapes (false for a string without any, and for any other value).
    pub escaped: bool,
}

/// The raw text of the member `key` of the JSON object `text`: `Some(Some(value))` when the
/// object has exactly one member of that name, `Some(None)` when it has none, and `None`
/// when only a full parse can tell (the text is outside the scanner's subset or not an
/// object, a key has escapes, or the key occurs twice).
pub fn find_member(text: &str, key: &str) -> Option<Option<Scanned>> {
    let mut scanner = JsonScanner::new(text.as_bytes(), 0);
    scanner.ws();
    scanner.eat(b'{')?;
    let mut found = None;
    // An escaped key or a second `key` stops the scan: uncertain.
    scanner.members(0, |name, escaped, value| {
        if escaped {
            return false;
        }
        if bytes_eq(&text.as_bytes()[name], key.as_bytes()) {
            if found.is_some() {
                return false;
            }
            found = Some(value);
        }
        true
    })?;
    scanner.ws();
    scanner.at_end().then_some(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An object that repeats a key is refused (the full parse rejects it as malformed), as
    /// are escaped keys and objects too wide to compare; distinct keys are fine at any depth.
    #[test]
    fn objects_that_repeat_a_key_are_refused() {
        assert!(accepts(r#"{"a":1,"b":{"a":2,"c":[{"a":3},{"a":4}]}}"#));
        for text in [r#"{"a":1,"a":2}"#, r#"{"x":{"a":1,"b":2,"a":3}}"#, r#"[{"k":1,"k":1}]"#, r#"{"\u0061":1}"#] {
            assert!(!accepts(text), "{text}");
        }
        let wide: Vec<String> = (0..=MAX_COMPARED_KEYS).map(|n| format!("\"k{n}\":{n}")).collect();
        assert!(!accepts(&format!("{{{}}}", wide.join(","))));
        assert!(accepts(&format!("{{{}}}", wide[..MAX_COMPARED_KEYS].join(","))));
    }

    fn accepts(text: &str) -> bool {
        let mut scanner = JsonScanner::new(text.as_bytes(), 0);
        scanner.ws();
        scanner.value(0).is_some() && {
            scanner.ws();
            scanner.at_end()
        }
    }

    #[test]
    fn accepts_the_common_subset() {
        for text in [
            r#"{"a":"b","c":[1,-2,3.5,-0,0.25],"d":{"e":null,"f":true,"g":false},"h":[]}"#,
            r#" { "a" : "é ✓ 😀 \" \\ \/ \b \f \n \r \t \u00e9" } "#,
            r#""plain""#,
            "{}",
            "[{},[],\"\"]",
        ] {
            assert!(accepts(text), "{text}");
            assert!(serde_json::from_str::<serde_json::Value>(text).is_ok(), "{text}");
        }
    }

    #[test]
    fn leaves_the_rest_to_serde_json() {
        for text in [
            "{\"a\":\"\u{1}\"}",
            r#"{"a":"\ud83d\ude00"}"#,
            r#"{"a":1e5}"#,
            r#"{"a":1234567890123456}"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":"\x"}"#,
            "{\"a\":1,}",
            "{\"a\"\n:1}",
            "[1,]",
            "nul",
            "{\"a\":1",
            "",
        ] {
            assert!(!accepts(text), "{text}");
        }
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 2), "]".repeat(MAX_DEPTH + 2));
        assert!(!accepts(&deep));
    }

    #[test]
    fn bytes_eq_is_equality() {
        let texts: Vec<Vec<u8>> = (0..48).map(|n| (0..n).map(|i| b'a' + (i % 7) as u8).collect()).collect();
        for a in &texts {
            for b in &texts {
                assert_eq!(bytes_eq(a, b), a == b);
            }
            for flip in 0..a.len() {
                let mut c = a.clone();
                c[flip] ^= 1;
                assert!(!bytes_eq(a, &c), "{a:?} {c:?}");
            }
        }
    }

    proptest! {
        #[test]
        fn bytes_eq_agrees_on_strings_of_one_length(len in 0usize..48, seed in proptest::collection::vec((0u8..3, 0u8..3), 48)) {
            // Two strings over a tiny alphabet: often equal, often equal but for a few bytes.
            let (a, b): (Vec<u8>, Vec<u8>) = seed[..len].iter().map(|&(x, y)| (b'a' + x, b'a' + y)).unzip();
            prop_assert_eq!(bytes_eq(&a, &b), a == b);
            prop_assert!(bytes_eq(&a, &a));
        }
    }

    #[test]
    fn find_member_is_certain_or_says_so() {
        let text = r#"{"file_path":"/repo/a.rs","n":{"x":[1,2]},"s":"a\"b"}"#;
        let get =
            |key: &str| find_member(text, key).map(|found| found.map(|value| (&text[value.range], value.escaped)));
        assert_eq!(get("file_path"), Some(Some(("\"/repo/a.rs\"", false))));
        assert_eq!(get("n"), Some(Some(("{\"x\":[1,2]}", false))));
        assert_eq!(get("s"), Some(Some((r#""a\"b""#, true))));
        assert_eq!(get("missing"), Some(None));
        assert_eq!(find_member(r#"{"a":1,"a":2}"#, "a"), None);
        assert_eq!(find_member(r#"{"\u0061":1}"#, "a"), None);
        assert_eq!(find_member(r#"{"a":1} x"#, "a"), None);
        assert_eq!(find_member(r#"[1]"#, "a"), None);
        assert_eq!(find_member(r#""a""#, "a"), None);
    }

    proptest! {
        /// Whatever the scanner accepts, serde_json accepts too.
        #[test]
        fn never_accepts_what_serde_json_rejects(text in r#"[\[\]{}",:0-9a-z\\ .\-é\t\r]{0,40}"#) {
            if accepts(&text) {
                prop_assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok(), "{}", text);
            }
        }

        #[test]
        fn find_member_agrees_with_serde_json(keys in proptest::collection::vec("[ab]{1,2}", 0..5), values in proptest::collection::vec(r#"(1|"x"|"x\\ny"|"\\u0041"|\[\]|\{"a":"\\t"\}|null)"#, 5)) {
            let body: Vec<String> = keys.iter().zip(&values).map(|(k, v)| format!("\"{k}\":{v}")).collect();
            let text = format!("{{{}}}", body.join(","));
            let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
            if let Some(found) = find_member(&text, "a") {
                let expected = parsed.get("a").cloned();
                if let Some(value) = &found {
                    // Only a string with a backslash has escapes.
                    let raw = &text[value.range.clone()];
                    prop_assert_eq!(value.escaped, raw.starts_with('"') && raw.contains('\\'));
                }
                let got = found.map(|value| serde_json::from_str::<serde_json::Value>(&text[value.range]).unwrap());
                prop_assert_eq!(got, expected);
            }
        }
    }
}
