//! JSON documents that people write (evidence, recorded verdicts): parsed like
//! `serde_json::from_str` into a [`Value`], except that a key repeated within one object is
//! an error instead of the last one silently winning (conflicting ground truth must not pass
//! unnoticed). The error carries the line and column, as serde_json's do.

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Parses `text` as one JSON value, refusing a key that repeats within an object.
pub fn from_str(text: &str) -> serde_json::Result<Value> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = Strict.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

struct Strict;

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
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
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Strict)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if members.contains_key(&key) {
                return Err(A::Error::custom(format!(
                    "duplicate key `{key}` in one object (JSON would keep only the last; remove or rename one)"
                )));
            }
            let value = map.next_value_seed(Strict)?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
