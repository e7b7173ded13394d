//! Argument validation against a tool's input schema, before anything else runs.
//!
//! A subset of JSON Schema 2020-12, exactly what our tool schemas use: `type` (integer vs number as the
//! draft defines them: 2.0 is an integer), `enum`, `const`, `minimum`/`maximum` (and exclusive forms),
//! `minLength`/`maxLength`, `pattern` (a search, as the draft says), `required`, `properties`,
//! `additionalProperties`, `items`, `minItems`/`maxItems`, `oneOf`/`anyOf`/`allOf`/`not`. Every error is
//! collected and the first by (path, keyword) is reported, so the answer does not depend on map order.

use crate::ErrorType;
use std::fmt::Write as _;

use regex_automata::meta::Regex;
use serde_json::{Map, Value};

use crate::envelope::Outcome;

/// One step of a path into the arguments.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum PathStep {
    /// An object member.
    Key(String),
    /// An array index.
    Index(usize),
}

/// The first schema violation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Where the offending value sits.
    pub path: Vec<PathStep>,
    /// The keyword that failed (`type`, `enum`, `required`, …, or `finite`).
    pub validator: &'static str,
    /// For `required` the missing member, for `additionalProperties` the unexpected one.
    pub member: Option<String>,
    /// For `enum`, the allowed values.
    pub allowed_values: Option<Vec<Value>>,
}

impl Violation {
    /// The dotted field path: `devices[0].kind`, `$` for the root, with the missing or unexpected
    /// member appended for `required` / `additionalProperties`.
    pub fn field(&self) -> String {
        let mut steps = self.path.clone();
        if let Some(member) = &self.member {
            steps.push(PathStep::Key(member.clone()));
        }
        let mut field = String::new();
        for step in &steps {
            match step {
                PathStep::Key(key) => {
                    if !field.is_empty() {
                        field.push('.');
                    }
                    field.push_str(key);
                }
                PathStep::Index(index) => {
                    let _ = write!(field, "[{index}]");
                }
            }
        }
        if field.is_empty() {
            "$".to_owned()
        } else {
            field
        }
    }

    fn sort_key(&self) -> (&[PathStep], &'static str) {
        (&self.path, self.validator)
    }
}

/// Validate `arguments` against `schema`; `None` when they conform.
pub fn first_violation(schema: &Value, arguments: &Value) -> Option<Violation> {
    if let Some(path) = first_non_finite(arguments, &mut Vec::new()) {
        return Some(Violation {
            path,
            validator: "finite",
            member: None,
            allowed_values: None,
        });
    }
    let mut violations = Vec::new();
    check(schema, arguments, &mut Vec::new(), &mut violations);
    // `min_by` keeps the first of equal keys, so ties (two missing members) follow schema/input order.
    violations
        .into_iter()
        .min_by(|a, b| a.sort_key().cmp(&b.sort_key()))
}

/// Validate a tool call's arguments and turn the first violation into an `invalid_argument` envelope.
/// Arguments that conform are left as the values the plans read: a whole float where an integer
/// is asked is that integer, so the value validated is the value used.
pub fn validate_arguments(
    tool: &str,
    schema: &Value,
    arguments: &mut Value,
) -> Result<(), Box<Outcome>> {
    if !arguments.is_object() {
        return Err(Box::new(
            Outcome::refused(
                tool,
                ErrorType::InvalidArgument,
                "Tool arguments must be a JSON object.",
            )
            .with("field", "$")
            .with("validator", "type")
            .with_remediation([
                "Send `arguments` as an object whose members the tool's inputSchema names.",
            ])
            .not_contacted(),
        ));
    }
    let Some(violation) = first_violation(schema, arguments) else {
        integral(schema, arguments);
        return Ok(());
    };
    let mut outcome = Outcome::refused(
        tool,
        ErrorType::InvalidArgument,
        "Tool arguments failed schema validation.",
    )
    .with("field", violation.field())
    .with("validator", violation.validator);
    if let Some(allowed) = violation.allowed_values {
        outcome.set("allowed_values", Value::Array(allowed));
    }
    Err(Box::new(
        outcome
            .with_remediation([
                "Read `field` and `validator`, then correct that argument against the tool's inputSchema from tools/list.",
            ])
            .with_do_not(["Do not resend the same arguments: the schema is checked before anything runs."])
            .not_contacted(),
    ))
}

/// Where the schema asks for an integer, a number written with a fraction of zero (`2.0`, `-0`)
/// becomes that integer. Validation accepts `2.0` as the draft says; a plan reads integers only, so
/// without this the validated `channel: 2.0` would read as no channel and the call would act on
/// the default one.
fn integral(schema: &Value, value: &mut Value) {
    let Some(schema) = schema.as_object() else {
        return;
    };
    if wants_integer(schema)
        && let Some(whole) = whole_number(value)
    {
        *value = whole;
    }
    match value {
        Value::Object(members) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            for (name, member) in members.iter_mut() {
                match properties.and_then(|p| p.get(name)) {
                    Some(member_schema) => integral(member_schema, member),
                    None => {
                        if let Some(extra @ Value::Object(_)) = schema.get("additionalProperties") {
                            integral(extra, member);
                        }
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items.iter_mut() {
                    integral(item_schema, item);
                }
            }
        }
        _ => {}
    }
    // Only the branches the value validated against say what it is.
    for keyword in ["oneOf", "anyOf", "allOf"] {
        if let Some(Value::Array(options)) = schema.get(keyword) {
            for option in options {
                if conforms(option, value) {
                    integral(option, value);
                }
            }
        }
    }
}

/// Whether the schema takes an integer and no other number.
fn wants_integer(schema: &Map<String, Value>) -> bool {
    match schema.get("type") {
        Some(Value::String(name)) => name == "integer",
        Some(Value::Array(names)) => {
            names.iter().any(|n| n == "integer") && !names.iter().any(|n| n == "number")
        }
        _ => false,
    }
}

/// A float with no fraction as the integer it is, when an integer type holds it.
fn whole_number(value: &Value) -> Option<Value> {
    let Value::Number(number) = value else {
        return None;
    };
    if number.is_i64() || number.is_u64() {
        return None;
    }
    let float = number
        .as_f64()
        .filter(|f| f.is_finite() && f.fract() == 0.0)?;
    // Printed without a fraction, a whole f64 is its exact digits; past i128 it is no integer a
    // plan reads anyway.
    let whole: i128 = format!("{float:.0}").parse().ok()?;
    u64::try_from(whole)
        .map(Value::from)
        .or_else(|_| i64::try_from(whole).map(Value::from))
        .ok()
}

/// JSON cannot carry NaN or infinity, but a literal like `1e400` overflows an f64. The stdio framing
/// rewrites such a number to this string so that it reaches validation and is refused by name.
pub const NON_FINITE_MARKER: &str = "\u{0}non-finite number";

fn first_non_finite(value: &Value, path: &mut Vec<PathStep>) -> Option<Vec<PathStep>> {
    match value {
        Value::String(text) if text == NON_FINITE_MARKER => Some(path.clone()),
        Value::Number(number) => number
            .as_f64()
            .is_some_and(|f| !f.is_finite())
            .then(|| path.clone()),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
            path.push(PathStep::Index(i));
            let found = first_non_finite(item, path);
            path.pop();
            found
        }),
        Value::Object(members) => members.iter().find_map(|(key, item)| {
            path.push(PathStep::Key(key.clone()));
            let found = first_non_finite(item, path);
            path.pop();
            found
        }),
        _ => None,
    }
}

fn is_integer(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => is_integer(value),
        _ => false,
    }
}

fn conforms(schema: &Value, value: &Value) -> bool {
    let mut violations = Vec::new();
    check(schema, value, &mut Vec::new(), &mut violations);
    violations.is_empty()
}

fn push(out: &mut Vec<Violation>, path: &[PathStep], validator: &'static str) {
    out.push(Violation {
        path: path.to_vec(),
        validator,
        member: None,
        allowed_values: None,
    });
}

fn check(schema: &Value, value: &Value, path: &mut Vec<PathStep>, out: &mut Vec<Violation>) {
    let Some(schema) = schema.as_object() else {
        // `false` accepts nothing; `true` and any non-object accept everything.
        if schema == &Value::Bool(false) {
            push(out, path, "false");
        }
        return;
    };
    if let Some(expected) = schema.get("type") {
        let matches = match expected {
            Value::String(name) => has_type(value, name),
            Value::Array(names) => names
                .iter()
                .filter_map(Value::as_str)
                .any(|n| has_type(value, n)),
            _ => true,
        };
        if !matches {
            push(out, path, "type");
        }
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.iter().any(|candidate| json_equal(candidate, value))
    {
        out.push(Violation {
            path: path.clone(),
            validator: "enum",
            member: None,
            allowed_values: Some(allowed.clone()),
        });
    }
    if let Some(constant) = schema.get("const")
        && !json_equal(constant, value)
    {
        push(out, path, "const");
    }
    if let Some(number) = value.as_f64().filter(|_| value.is_number()) {
        check_number(schema, number, path, out);
    }
    if let Some(text) = value.as_str() {
        check_string(schema, text, path, out);
    }
    if let Some(items) = value.as_array() {
        check_array(schema, items, path, out);
    }
    if let Some(members) = value.as_object() {
        check_object(schema, members, path, out);
    }
    check_combinators(schema, value, path, out);
}

fn check_number(
    schema: &Map<String, Value>,
    number: f64,
    path: &[PathStep],
    out: &mut Vec<Violation>,
) {
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    if bound("minimum").is_some_and(|min| number < min) {
        push(out, path, "minimum");
    }
    if bound("maximum").is_some_and(|max| number > max) {
        push(out, path, "maximum");
    }
    if bound("exclusiveMinimum").is_some_and(|min| number <= min) {
        push(out, path, "exclusiveMinimum");
    }
    if bound("exclusiveMaximum").is_some_and(|max| number >= max) {
        push(out, path, "exclusiveMaximum");
    }
}

fn check_string(
    schema: &Map<String, Value>,
    text: &str,
    path: &[PathStep],
    out: &mut Vec<Violation>,
) {
    // Lengths count code points, as the draft does.
    let length = text.chars().count() as u64;
    check_count(schema, ("minLength", "maxLength"), length, path, out);
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        // An uncompilable pattern is our bug, not the caller's: refuse rather than let anything through.
        let matched = Regex::new(pattern).is_ok_and(|regex| regex.is_match(text));
        if !matched {
            push(out, path, "pattern");
        }
    }
}

/// A length or item count against the schema's lower and upper bound keywords.
fn check_count(
    schema: &Map<String, Value>,
    (min_key, max_key): (&'static str, &'static str),
    count: u64,
    path: &[PathStep],
    out: &mut Vec<Violation>,
) {
    if schema
        .get(min_key)
        .and_then(Value::as_u64)
        .is_some_and(|min| count < min)
    {
        push(out, path, min_key);
    }
    if schema
        .get(max_key)
        .and_then(Value::as_u64)
        .is_some_and(|max| count > max)
    {
        push(out, path, max_key);
    }
}

fn check_array(
    schema: &Map<String, Value>,
    items: &[Value],
    path: &mut Vec<PathStep>,
    out: &mut Vec<Violation>,
) {
    let count = items.len() as u64;
    check_count(schema, ("minItems", "maxItems"), count, path, out);
    if let Some(item_schema) = schema.get("items") {
        for (index, item) in items.iter().enumerate() {
            path.push(PathStep::Index(index));
            check(item_schema, item, path, out);
            path.pop();
        }
    }
}

fn check_object(
    schema: &Map<String, Value>,
    members: &Map<String, Value>,
    path: &mut Vec<PathStep>,
    out: &mut Vec<Violation>,
) {
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(Value::Array(required)) = schema.get("required") {
        for name in required.iter().filter_map(Value::as_str) {
            if !members.contains_key(name) {
                out.push(Violation {
                    path: path.clone(),
                    validator: "required",
                    member: Some(name.to_owned()),
                    allowed_values: None,
                });
            }
        }
    }
    for (name, member) in members {
        if let Some(member_schema) = properties.and_then(|p| p.get(name)) {
            path.push(PathStep::Key(name.clone()));
            check(member_schema, member, path, out);
            path.pop();
            continue;
        }
        match schema.get("additionalProperties") {
            Some(Value::Bool(false)) => out.push(Violation {
                path: path.clone(),
                validator: "additionalProperties",
                member: Some(name.clone()),
                allowed_values: None,
            }),
            Some(extra @ Value::Object(_)) => {
                path.push(PathStep::Key(name.clone()));
                check(extra, member, path, out);
                path.pop();
            }
            _ => {}
        }
    }
}

fn check_combinators(
    schema: &Map<String, Value>,
    value: &Value,
    path: &[PathStep],
    out: &mut Vec<Violation>,
) {
    if let Some(Value::Array(options)) = schema.get("oneOf")
        && options
            .iter()
            .filter(|option| conforms(option, value))
            .count()
            != 1
    {
        push(out, path, "oneOf");
    }
    if let Some(Value::Array(options)) = schema.get("anyOf")
        && !options.iter().any(|option| conforms(option, value))
    {
        push(out, path, "anyOf");
    }
    if let Some(Value::Array(parts)) = schema.get("allOf")
        && !parts.iter().all(|part| conforms(part, value))
    {
        push(out, path, "allOf");
    }
    if let Some(negated) = schema.get("not")
        && conforms(negated, value)
    {
        push(out, path, "not");
    }
}

/// JSON equality where 1 and 1.0 are the same number (the draft compares numbers by value).
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
