//! JSON documents that people write (evidence, recorded verdicts): parsed like
//! `serde_json::from_str` into a [`Value`], except that a key repeated within one object is
//! an error instead of the last one silently winning (conflicting ground truth must not pass
//! unnoticed). The error carries the line and column, as serde_json's do.

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// `object.get(key)`, faster for the small objects of records, events and evidence: up to
/// [`SCANNED_MEMBERS`] members, a look along them (a key of another length is passed over at
/// once) is cheaper than hashing `key` with SipHash, as `serde_json`'s map does on every
/// lookup.
#[inline]
pub fn member<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if object.len() <= SCANNED_MEMBERS {
        object.iter().find_map(|(name, value)| (name == key).then_some(value))
    } else {
        object.get(key)
    }
}

/// The widest object [`member`] looks along instead of hashing.
pub const SCANNED_MEMBERS: usize = 16;

/// Parses `text` as one JSON value, refusing a key that repeats within an object.
pub fn from_str(text: &str) -> serde_json::Result<Value> {
    // The members and elements of the objects and lists being read wait on stacks that this
    // thread keeps from one call to the next (see [`Pending`]).
    let mut pending = PENDING.with(std::cell::Cell::take);
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let parsed = Strict { pending: &mut pending }.deserialize(&mut deserializer).and_then(|value| {
        deserializer.end()?;
        Ok(value)
    });
    pending.members.clear();
    pending.items.clear();
    if pending.members.capacity() <= MAX_KEPT_PENDING && pending.items.capacity() <= MAX_KEPT_PENDING {
        PENDING.with(|cell| cell.set(pending));
    }
    parsed
}

/// The members and elements read of the objects and lists not yet closed, innermost last.
///
/// An object is built once it closes, into a map of exactly its size: a map grown member by
/// member reallocates its entries, and once they pass 1 KiB (about ten members) glibc's
/// `malloc` takes every such request as a large one and first consolidates all the small
/// blocks freed since the last (`malloc_consolidate`). On a Claude Code hook trace that was
/// about 4.5% of the reading time (see docs/benchmarks.md).
#[derive(Default)]
struct Pending {
    members: Vec<(String, Value)>,
    items: Vec<Value>,
}

impl Pending {
    /// The members pending from `base` on, taken into a map with room for `room`.
    fn object_from(&mut self, base: usize, room: usize) -> Map<String, Value> {
        let mut members = Map::with_capacity(room);
        members.extend(self.members.drain(base..));
        members
    }
}

thread_local! {
    static PENDING: std::cell::Cell<Pending> = std::cell::Cell::new(Pending::default());
}

/// The most pending members or elements whose room a thread keeps between calls.
const MAX_KEPT_PENDING: usize = 4096;

/// What to do about `error`, from reading `text` as one JSON document, when the parser's
/// own words do not say it: an empty file, comments (JSON has none), nesting deeper than
/// the parser reads (128 levels), or several values, one per line (JSON Lines, such as a
/// trace, where one document belongs). `None` when the error speaks for itself.
pub fn advice(text: &str, error: &serde_json::Error) -> Option<&'static str> {
    let start = text.trim_start_matches('\u{feff}').trim_start();
    let message = error.to_string();
    if start.is_empty() {
        Some("the file is empty (or only blank)")
    } else if start.starts_with("//") || start.starts_with("/*") || start.starts_with('#') {
        Some("JSON has no comments: remove them")
    } else if message.starts_with("recursion limit exceeded") {
        Some("it nests lists and objects deeper than 128 levels, the most that is read: flatten it")
    } else if message.starts_with("trailing characters") && error.line() > 1 {
        let rest = text.lines().nth(error.line() - 1).unwrap_or_default().trim_start();
        rest.starts_with(['{', '[']).then_some(
            "it holds more than one JSON value, one per line (JSON Lines, as a trace is written: a trace goes to \
                 `--trace`), where one JSON document belongs",
        )
    } else {
        None
    }
}

/// [`from_str`], reading a lone UTF-16 surrogate escape as U+FFFD (see
/// [`replace_lone_surrogates`]) instead of failing; the error is the one of `text` as written.
pub fn from_str_lenient_surrogates(text: &str) -> serde_json::Result<Value> {
    from_str(text)
        .or_else(|error| replace_lone_surrogates(text).and_then(|repaired| from_str(&repaired).ok()).ok_or(error))
}

/// `text` with every lone UTF-16 surrogate escape (`\ud83d` without its pair, as a
/// JavaScript string cut inside an emoji serializes) replaced by `\ufffd`, the replacement
/// character; `None` when there is none. JSON's grammar allows such escapes, but they
/// spell no Unicode text, and `serde_json` refuses them.
pub fn replace_lone_surrogates(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let hex = |at: usize| -> Option<u16> {
        let digits = bytes.get(at..at + 4)?;
        u16::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    };
    // `\uXXXX` at `at`: the code unit.
    let unit = |at: usize| -> Option<u16> {
        (bytes.get(at) == Some(&b'\\') && bytes.get(at + 1) == Some(&b'u')).then(|| hex(at + 2)).flatten()
    };
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut at = 0;
    while let Some(offset) = bytes.get(at..).and_then(|rest| rest.iter().position(|&byte| byte == b'\\')) {
        at += offset;
        let Some(code) = unit(at) else {
            // Another escape (or a lone backslash, which the parser reports): two bytes on.
            at += 2;
            continue;
        };
        let paired =
            (0xD800..0xDC00).contains(&code) && unit(at + 6).is_some_and(|low| (0xDC00..0xE000).contains(&low));
        if paired {
            at += 12;
        } else if (0xD800..0xE000).contains(&code) {
            let repaired = out.get_or_insert_with(|| String::with_capacity(text.len()));
            repaired.push_str(&text[copied..at]);
            repaired.push_str("\\ufffd");
            at += 6;
            copied = at;
        } else {
            at += 6;
        }
    }
    let mut repaired = out?;
    repaired.push_str(&text[copied..]);
    Some(repaired)
}

/// Reads one value; `pending` holds what the enclosing objects and lists read so far.
struct Strict<'p> {
    pending: &'p mut Pending,
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let base = self.pending.items.len();
        while let Some(item) = seq.next_element_seed(Strict { pending: &mut *self.pending })? {
            self.pending.items.push(item);
        }
        let mut items = Vec::with_capacity(self.pending.items.len() - base);
        items.extend(self.pending.items.drain(base..));
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let base = self.pending.members.len();
        // An object wider than `member` looks along goes into a map as it is read.
        let mut wide: Option<Map<String, Value>> = None;
        while let Some(key) = map.next_key::<String>()? {
            let repeated = match &wide {
                Some(members) => members.contains_key(&key),
                None => self.pending.members[base..].iter().any(|(seen, _)| *seen == key),
            };
            if repeated {
                return Err(A::Error::custom(format!(
                    "duplicate key `{key}` in one object (JSON would keep only the last; remove or rename one)"
                )));
            }
            let value = map.next_value_seed(Strict { pending: &mut *self.pending })?;
            match &mut wide {
                Some(members) => {
                    members.insert(key, value);
                }
                None => {
                    self.pending.members.push((key, value));
                    if self.pending.members.len() - base > SCANNED_MEMBERS {
                        wide = Some(self.pending.object_from(base, 4 * SCANNED_MEMBERS));
                    }
                }
            }
        }
        let count = self.pending.members.len() - base;
        Ok(Value::Object(wide.unwrap_or_else(|| self.pending.object_from(base, count))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advice_says_what_the_parser_does_not() {
        let advice_of = |text: &str| advice(text, &from_str(text).unwrap_err());
        assert_eq!(advice_of(""), Some("the file is empty (or only blank)"));
        assert_eq!(advice_of("\u{feff} \n"), Some("the file is empty (or only blank)"));
        assert_eq!(advice_of("// evidence\n{}"), Some("JSON has no comments: remove them"));
        assert_eq!(advice_of("# x\n{}"), Some("JSON has no comments: remove them"));
        assert!(advice_of(&"[".repeat(200)).unwrap().contains("deeper than 128 levels"));
        assert!(advice_of("{\"a\": 1}\n{\"a\": 2}\n").unwrap().contains("one per line (JSON Lines"));
        // Errors that speak for themselves.
        for text in ["{\"a\": 1,}", "{\"a\": 1} x", "{\"a\" 1}", "{\"a\": 1}\n}"] {
            assert_eq!(advice_of(text), None, "{text}");
        }
    }

    /// Objects narrow and wide, nested in lists and objects, read as serde_json reads them
    /// (members in order), and a key repeated anywhere in a wide object is still refused.
    #[test]
    fn objects_and_lists_of_every_width_read_as_serde_json() {
        let object = |width: usize, inner: &str| {
            let members: Vec<String> = (0..width).map(|n| format!("\"k{n}\":{inner}")).collect();
            format!("{{{}}}", members.join(","))
        };
        for width in [0, 1, SCANNED_MEMBERS, SCANNED_MEMBERS + 1, 3 * SCANNED_MEMBERS] {
            let list = format!("[{}]", vec![object(width, "[1,{\"a\":[]}]"); 3].join(","));
            let text = object(width, &list);
            assert_eq!(from_str(&text).unwrap(), serde_json::from_str::<Value>(&text).unwrap(), "width {width}");
            let read: Vec<String> = match from_str(&text).unwrap() {
                Value::Object(members) => members.keys().cloned().collect(),
                _ => unreachable!(),
            };
            assert_eq!(read, (0..width).map(|n| format!("k{n}")).collect::<Vec<_>>());
            if width > 0 {
                let open = object(width, "1");
                for repeat in [0, width / 2, width - 1] {
                    let text = format!("{},\"k{repeat}\":0}}", &open[..open.len() - 1]);
                    let error = from_str(&text).unwrap_err().to_string();
                    assert!(error.contains(&format!("duplicate key `k{repeat}`")), "{width} {repeat}: {error}");
                }
            }
        }
        // A read after a failed one (whose pending members were left half read) is whole.
        assert!(from_str("{\"a\":[1,{\"b\":2,\"b\":3}]}").is_err());
        assert_eq!(from_str("{\"c\":[4]}").unwrap(), serde_json::json!({"c": [4]}));
    }

    /// `member` answers as `Map::get` for objects narrower and wider than it looks along.
    #[test]
    fn member_is_get() {
        for width in [0, 1, 2, SCANNED_MEMBERS - 1, SCANNED_MEMBERS, SCANNED_MEMBERS + 1, 3 * SCANNED_MEMBERS] {
            let object: Map<String, Value> =
                (0..width).map(|n| (format!("k{}", "x".repeat(n % 3) + &n.to_string()), Value::from(n))).collect();
            for key in object.keys().map(String::as_str).chain(["", "k", "missing", "kx1"]) {
                assert_eq!(member(&object, key), object.get(key), "width {width}, key {key:?}");
            }
        }
    }

    #[test]
    fn lone_surrogates_are_replaced_and_pairs_kept() {
        // (text, repaired)
        for (text, repaired) in [
            (r#"{"c": "cut \ud83d here"}"#, Some(r#"{"c": "cut \ufffd here"}"#)),
            (r#"{"c": "\udc00 and \uD83D"}"#, Some(r#"{"c": "\ufffd and \ufffd"}"#)),
            (r#"{"c": "pair \ud83d\ude00 ok"}"#, None),
            (r#"{"c": "escaped \\ud83d is text"}"#, None),
            (r#"{"c": "\u00e9 \n"}"#, None),
            (r#"{"c": "\ud83d\ud83d\ude00"}"#, Some(r#"{"c": "\ufffd\ud83d\ude00"}"#)),
            ("\\", None),
            (r"\u12", None),
        ] {
            assert_eq!(replace_lone_surrogates(text).as_deref(), repaired, "{text}");
            if let Some(repaired) = repaired {
                assert!(from_str(text).is_err(), "{text}");
                assert!(from_str(repaired).is_ok(), "{repaired}");
                assert_eq!(from_str_lenient_surrogates(text).ok(), from_str(repaired).ok(), "{text}");
            }
        }
    }

    #[test]
    fn values_parse_as_serde_json_does_and_repeated_keys_are_refused() {
        for text in [r#"{"a": [1, -2, 3.5, "x", null, true, {"b": {}}], "c": "\u00e9"}"#, "[]", "7", r#""s""#, "null"] {
            assert_eq!(from_str(text).unwrap(), serde_json::from_str::<Value>(text).unwrap(), "{text}");
        }
        let error = from_str("{\"ci\": {\n  \"status\": \"failure\",\n  \"status\": \"success\"}}").unwrap_err();
        assert!(error.to_string().contains("duplicate key `status`"), "{error}");
        assert_eq!(error.line(), 3, "{error}");
        // The same key in two different objects is fine; trailing text is not.
        assert!(from_str(r#"[{"a": 1}, {"a": 2}]"#).is_ok());
        assert!(from_str("{} x").is_err());
    }
}
