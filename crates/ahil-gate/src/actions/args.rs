//! Typed reads of a call's arguments. The schema checked them before any plan runs, so a read
//! names the key once and says what it expects; an absent or wrong-typed one reads as `None`.

use serde_json::Value;

pub(crate) trait Args {
    fn arg_str(&self, key: &str) -> Option<&str>;
    fn arg_bool(&self, key: &str) -> Option<bool>;
    fn arg_f64(&self, key: &str) -> Option<f64>;
    fn arg_u64(&self, key: &str) -> Option<u64>;
    /// The array under `key`, empty when there is none.
    fn arg_array(&self, key: &str) -> &[Value];
    /// The text or texts under `key` (one string or an array of them), empty when there are none.
    fn arg_texts(&self, key: &str) -> Vec<String>;
}

impl Args for Value {
    fn arg_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    fn arg_bool(&self, key: &str) -> Option<bool> {
        self.get(key).and_then(Value::as_bool)
    }

    fn arg_f64(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(Value::as_f64)
    }

    fn arg_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(Value::as_u64)
    }

    fn arg_array(&self, key: &str) -> &[Value] {
        self.get(key)
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
    }

    fn arg_texts(&self, key: &str) -> Vec<String> {
        match self.get(key) {
            Some(Value::String(one)) => vec![one.clone()],
            Some(Value::Array(many)) => many
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            // Absent (or, past validation, impossible): none.
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Args;

    #[test]
    fn each_read_gives_its_type_and_reads_a_missing_or_mistyped_argument_as_absent() {
        let args = json!({"s": "x", "b": true, "f": 0.5, "u": 7, "a": [1, 2]});
        assert_eq!(args.arg_str("s"), Some("x"));
        assert_eq!(args.arg_bool("b"), Some(true));
        assert_eq!(args.arg_f64("f"), Some(0.5));
        assert_eq!(args.arg_u64("u"), Some(7));
        assert_eq!(args.arg_array("a"), &[json!(1), json!(2)][..]);
        assert_eq!(args.arg_str("b"), None);
        assert_eq!(args.arg_bool("missing"), None);
        assert_eq!(args.arg_u64("f"), None);
        assert!(args.arg_array("s").is_empty());
        assert!(args.arg_array("missing").is_empty());
    }

    #[test]
    fn a_text_argument_reads_as_one_text_or_several_and_a_missing_one_as_none() {
        let args = json!({"one": "ok", "many": ["a", "b"], "n": 3});
        assert_eq!(args.arg_texts("one"), ["ok"]);
        assert_eq!(args.arg_texts("many"), ["a", "b"]);
        assert!(args.arg_texts("n").is_empty());
        assert!(args.arg_texts("missing").is_empty());
    }
}
