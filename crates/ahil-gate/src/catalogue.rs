//! The tool catalogue: the one place a tool is declared (name, schema, annotations, description).
//!
//! Only tools that work are listed. Adding a tool is one entry in [`CATALOGUE`] plus its action; the
//! reference test below then checks its name, argument names and hints against the reference surface.

use serde_json::{Value, json};

/// One tool as the MCP surface lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub title: String,
    pub description: String,
    /// A flat JSON schema (no `$ref`), `additionalProperties: false`.
    pub input_schema: Value,
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

impl ToolSpec {
    /// The MCP `annotations` object: read-only tools carry only `readOnlyHint` and `openWorldHint`
    /// (the other two hints mean nothing for a tool that changes nothing).
    pub fn annotations(&self) -> Value {
        if self.read_only {
            json!({"title": self.title, "readOnlyHint": true, "openWorldHint": self.open_world})
        } else {
            json!({
                "title": self.title,
                "readOnlyHint": false,
                "destructiveHint": self.destructive,
                "idempotentHint": self.idempotent,
                "openWorldHint": self.open_world,
            })
        }
    }

    /// The tool as one `tools/list` entry.
    pub fn to_mcp_value(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": self.annotations(),
        })
    }
}

/// When a tool is listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Availability {
    /// With or without a configuration (an unprovisioned server answers `config_file_not_found`).
    Always,
}

/// How a tool changes the world.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// Reads only.
    ReadOnly,
    /// Changes something: (destructive, idempotent).
    #[allow(
        dead_code,
        reason = "the first effect tools arrive with their own issues"
    )]
    Effect { destructive: bool, idempotent: bool },
}

struct ToolDef {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    kind: Kind,
    open_world: bool,
    schema: fn() -> Value,
    availability: Availability,
}

fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

const CATALOGUE: &[ToolDef] = &[
    ToolDef {
        name: "debugger_info",
        title: "Debugger backend availability",
        description: "Check that this bench's debugger toolchain runs: executes only `<executable> --version` \
(10 s at most) and never addresses a probe or the board. Needs exactly one configured debugger whose \
executable is pinned (a version 1 configuration also needs allow_probe). Returns backend, executable, \
probe_id, version and config_status. Fails with debugger_not_found, timeout, debugger_error, \
not_supported or permission_denied. Next: debugger_probes_list for probe ids, probe_target for the board.",
        kind: Kind::ReadOnly,
        open_world: false,
        schema: no_arguments,
        availability: Availability::Always,
    },
    ToolDef {
        name: "project_config_describe",
        title: "Describe the configuration",
        description: "Show the configuration this server enforces and what may change in it: the rights in \
force, writable_keys (current_value and value_schema), locked_keys (with the grant that unlocks each), \
patterns for new entries, and whether an open run blocks writes. Needs no permission and touches no \
hardware. Fails with config_invalid or config_unreadable when the file on disk cannot be read. Next: \
project_config_set with keys taken from writable_keys.",
        kind: Kind::ReadOnly,
        open_world: false,
        schema: no_arguments,
        availability: Availability::Always,
    },
];

impl ToolDef {
    fn spec(&self) -> ToolSpec {
        let (read_only, destructive, idempotent) = match self.kind {
            Kind::ReadOnly => (true, false, true),
            Kind::Effect {
                destructive,
                idempotent,
            } => (false, destructive, idempotent),
        };
        ToolSpec {
            name: self.name.to_owned(),
            title: self.title.to_owned(),
            description: self.description.to_owned(),
            input_schema: (self.schema)(),
            read_only,
            destructive,
            idempotent,
            open_world: self.open_world,
        }
    }

    fn listed(&self, _provisioned: bool) -> bool {
        match self.availability {
            Availability::Always => true,
        }
    }
}

/// The tools this server lists, in catalogue order.
pub fn tools(provisioned: bool) -> Vec<ToolSpec> {
    CATALOGUE
        .iter()
        .filter(|def| def.listed(provisioned))
        .map(ToolDef::spec)
        .collect()
}

/// One listed tool by name.
pub fn tool(name: &str, provisioned: bool) -> Option<ToolSpec> {
    CATALOGUE
        .iter()
        .find(|def| def.name == name && def.listed(provisioned))
        .map(ToolDef::spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn reference() -> Vec<Value> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/reference/agentic-hil-0.25/tools.json"
        );
        let fallback = "/work/shared/reference/agentic-hil-0.25/tools.json";
        let text = std::fs::read_to_string(path)
            .or_else(|_| std::fs::read_to_string(fallback))
            .expect("the reference tools.json is readable");
        serde_json::from_str(&text).expect("the reference tools.json is JSON")
    }

    fn property_names(schema: &Value) -> BTreeSet<String> {
        schema["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    }

    #[test]
    fn every_listed_tool_matches_the_reference_names_arguments_and_hints() {
        let reference = reference();
        for provisioned in [true, false] {
            for spec in tools(provisioned) {
                let theirs = reference
                    .iter()
                    .find(|t| t["name"] == spec.name)
                    .unwrap_or_else(|| panic!("{} is not a reference tool", spec.name));
                assert_eq!(
                    property_names(&spec.input_schema),
                    property_names(&theirs["inputSchema"]),
                    "{}: argument names",
                    spec.name
                );
                assert_eq!(
                    spec.input_schema.get("required"),
                    theirs["inputSchema"].get("required"),
                    "{}: required",
                    spec.name
                );
                let ours = spec.annotations();
                for hint in [
                    "readOnlyHint",
                    "destructiveHint",
                    "idempotentHint",
                    "openWorldHint",
                ] {
                    assert_eq!(
                        ours.get(hint),
                        theirs["annotations"].get(hint),
                        "{}: {hint}",
                        spec.name
                    );
                }
            }
        }
    }

    #[test]
    fn schemas_are_flat_closed_objects() {
        for spec in tools(true) {
            let text = spec.input_schema.to_string();
            assert!(!text.contains("$ref"), "{} uses $ref", spec.name);
            assert_eq!(spec.input_schema["type"], "object", "{}", spec.name);
            assert_eq!(
                spec.input_schema["additionalProperties"], false,
                "{}",
                spec.name
            );
        }
    }

    #[test]
    fn descriptions_are_one_short_paragraph_of_our_own() {
        let reference = reference();
        for spec in tools(true) {
            assert!(!spec.description.contains('\n'), "{}", spec.name);
            assert!(spec.description.len() < 700, "{} is too long", spec.name);
            let theirs = reference
                .iter()
                .find(|t| t["name"] == spec.name)
                .expect("listed");
            assert_ne!(
                theirs["description"], spec.description,
                "{} copies the reference",
                spec.name
            );
        }
    }

    #[test]
    fn tool_names_are_unique() {
        let names: BTreeSet<_> = CATALOGUE.iter().map(|d| d.name).collect();
        assert_eq!(names.len(), CATALOGUE.len());
    }

    #[test]
    fn the_first_two_tools_are_listed_with_and_without_a_configuration() {
        for provisioned in [true, false] {
            let names: Vec<String> = tools(provisioned).into_iter().map(|t| t.name).collect();
            assert_eq!(names, ["debugger_info", "project_config_describe"]);
        }
        assert!(tool("debugger_info", true).is_some());
        assert!(tool("flash_firmware", true).is_none());
    }

    #[test]
    fn read_only_annotations_carry_only_the_read_only_and_open_world_hints() {
        let spec = tool("debugger_info", true).expect("listed");
        assert_eq!(
            spec.annotations(),
            json!({"title": "Debugger backend availability", "readOnlyHint": true, "openWorldHint": false})
        );
    }
}
