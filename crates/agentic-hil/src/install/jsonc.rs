//! JSON and JSONC host files edited through jsonc-parser's concrete syntax tree: only the nodes we
//! add or remove change, so the operator's comments, indentation, inline arrays and final newline
//! stay as they wrote them (a parse-and-re-emit would rewrite all of it).

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstContainerNode, CstInputValue, CstNode, CstObject, CstRootNode};
use serde_json::Value;

/// What the hosts themselves accept: comments and trailing commas (VS Code and Gemini read JSONC),
/// none of JSON5's other liberties, so a file we can edit is one the host can still read.
fn options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

pub fn parse(text: &str) -> Result<CstRootNode, String> {
    CstRootNode::parse(text, &options()).map_err(|err| format!("not JSON or JSONC: {err}"))
}

/// The top-level object; an empty (or comment-only) file gets one.
pub fn root_object(root: &CstRootNode) -> Result<CstObject, String> {
    match root.value() {
        None => Ok(root.object_value_or_set()),
        Some(node) => node
            .as_object()
            .ok_or_else(|| "its top level is not an object".to_owned()),
    }
}

pub fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(map) => {
            CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

/// The object at `keys` below `object`. With `created`, missing objects are made on the way and
/// each one's key path is pushed there; without, a missing key gives `None`.
pub fn walk(
    object: CstObject,
    keys: &[&str],
    mut created: Option<&mut Vec<Vec<String>>>,
) -> Result<Option<CstObject>, String> {
    let mut current = object;
    for (depth, key) in keys.iter().enumerate() {
        let prop = if let Some(prop) = current.get(key) {
            prop
        } else {
            let Some(created) = created.as_deref_mut() else {
                return Ok(None);
            };
            created.push(keys[..=depth].iter().map(|k| (*k).to_owned()).collect());
            current.append(key, CstInputValue::Object(Vec::new()))
        };
        current = prop
            .object_value()
            .ok_or_else(|| format!("`{key}` is not an object"))?;
    }
    Ok(Some(current))
}

fn is_empty_container(node: &CstNode) -> bool {
    match node {
        CstNode::Container(CstContainerNode::Object(object)) => object.properties().is_empty(),
        CstNode::Container(CstContainerNode::Array(array)) => array.elements().is_empty(),
        _ => false,
    }
}

/// Removes each key in `created` (paths below the root) whose value is now an empty object or
/// list, deepest first: a key we added goes once nothing the operator put in it is left.
pub fn prune(root: &CstRootNode, created: &[Vec<String>]) {
    let mut paths: Vec<&Vec<String>> = created.iter().collect();
    paths.sort_by_key(|path| std::cmp::Reverse(path.len()));
    for path in paths {
        let Some((last, parents)) = path.split_last() else {
            continue;
        };
        let Some(Some(parent)) = root.object_value().map(|top| {
            let parents: Vec<&str> = parents.iter().map(String::as_str).collect();
            walk(top, &parents, None).ok().flatten()
        }) else {
            continue;
        };
        if let Some(prop) = parent.get(last)
            && prop.value().is_some_and(|value| is_empty_container(&value))
        {
            prop.remove();
        }
    }
}

/// Whether `text` is nothing but an empty object: a file we created holds nothing of the operator's.
pub fn is_bare_empty_object(text: &str) -> bool {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    compact == "{}" || compact.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_entry_added_then_pruned_gives_back_a_commented_four_space_file() {
        let original = "{\n    // mine\n    \"theme\": \"dark\",\n    \"list\": [1, 2]\n}";
        let root = parse(original).expect("parse");
        let mut created = Vec::new();
        let servers = walk(
            root_object(&root).expect("object"),
            &["mcpServers"],
            Some(&mut created),
        )
        .expect("walk")
        .expect("created");
        servers.append(
            "agentic-hil",
            input(&json!({"command": "/x", "args": ["a"]})),
        );
        let written = root.to_string();
        assert!(written.starts_with("{\n    // mine\n    \"theme\": \"dark\",\n    \"list\": [1, 2],\n    \"mcpServers\": {\n        \"agentic-hil\""), "{written}");
        let root = parse(&written).expect("parse again");
        let top = root.object_value().expect("object");
        let servers = walk(top, &["mcpServers"], None)
            .expect("walk")
            .expect("there");
        servers.get("agentic-hil").expect("ours").remove();
        prune(&root, &created);
        assert_eq!(root.to_string(), original);
    }

    #[test]
    fn a_file_with_a_single_quoted_string_is_refused_rather_than_rewritten() {
        assert!(parse("{'a': 1}").is_err());
        assert!(parse("{\"a\": 1, // c\n}").is_ok());
    }
}
