//! MCP resources: the error catalogue, whole (`agentic-hil://reference/errors`) and one entry per
//! error type (`agentic-hil://reference/errors/{error_type}`, with an optional `:<scope>` suffix).

use ahil_gate::audit::errors;
use rmcp::ErrorData;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate,
};

const ERRORS_URI: &str = "agentic-hil://reference/errors";
const JSON: &str = "application/json";

/// The static resources.
pub fn list() -> ListResourcesResult {
    ListResourcesResult::with_all_items(vec![
        Resource::new(ERRORS_URI, "errors")
            .with_title("Error catalogue")
            .with_description(
                "Every error_type this server can answer with: what it means, what to do in order, \
                 and what not to do.",
            )
            .with_mime_type(JSON),
    ])
}

/// The resource templates.
pub fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(vec![
        ResourceTemplate::new(format!("{}{{error_type}}", errors::URI_PREFIX), "error")
            .with_title("Advice for one error type")
            .with_description(
                "One catalogue entry, e.g. agentic-hil://reference/errors/audit_unavailable; a \
                 `:<scope>` suffix falls back to the plain entry.",
            )
            .with_mime_type(JSON),
    ])
}

/// Reads one resource; an unknown URI or error type is JSON-RPC error -32002.
pub fn read(uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let value = if uri == ERRORS_URI {
        errors::catalogue_value()
    } else {
        let entry = uri
            .strip_prefix(errors::URI_PREFIX)
            .and_then(errors::lookup)
            .ok_or_else(|| {
                ErrorData::resource_not_found(
                    "No resource has that URI.",
                    Some(serde_json::json!({"uri": uri})),
                )
            })?;
        errors::entry_value(entry)
    };
    let text = serde_json::to_string(&value)
        .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(text, uri).with_mime_type(JSON),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ErrorCode;

    fn text_of(result: &ReadResourceResult) -> serde_json::Value {
        match &result.contents[0] {
            ResourceContents::TextResourceContents { text, .. } => {
                serde_json::from_str(text).expect("the resource is JSON")
            }
            _ => panic!("a text resource"),
        }
    }

    #[test]
    fn one_error_type_is_served_with_its_meaning_and_remediation() {
        let result = read("agentic-hil://reference/errors/audit_unavailable").expect("known");
        // The catalogue's own tests hold every entry to a meaning and a remediation.
        let listed = errors::lookup("audit_unavailable").expect("listed");
        assert_eq!(text_of(&result), errors::entry_value(listed));
    }

    #[test]
    fn the_whole_catalogue_is_one_resource() {
        let all = text_of(&read(ERRORS_URI).expect("listed"));
        assert!(all.get("permission_denied").is_some());
    }

    #[test]
    fn an_unknown_error_type_is_resource_not_found() {
        let err = read("agentic-hil://reference/errors/no_such_thing").expect_err("unknown");
        assert_eq!(err.code, ErrorCode::RESOURCE_NOT_FOUND);
    }
}
