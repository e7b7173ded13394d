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

fn artifact_upload_schema() -> Value {
    let text = json!({"type": "string", "minLength": 1});
    json!({
        "type": "object",
        "properties": {"image_path": text, "filename": text, "data_base64": text},
        "additionalProperties": false,
        "oneOf": [{"required": ["image_path"]}, {"required": ["filename", "data_base64"]}],
    })
}

fn bench_run_start_schema() -> Value {
    let text = json!({"type": "string", "minLength": 1});
    json!({
        "type": "object",
        "properties": {
            "devices": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "kind": {"type": "string", "enum": ["debugger", "uart", "can", "power_supply"]},
                        "id": text,
                        "participant": text,
                    },
                    "required": ["kind"],
                    "additionalProperties": false,
                },
            },
            "label": text,
            "wait_s": {"type": "number", "minimum": 0, "maximum": 900},
        },
        "required": ["devices"],
        "additionalProperties": false,
    })
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
    ToolDef {
        name: "artifact_upload",
        title: "Upload a firmware artifact",
        description: "Store a firmware image under artifacts.upload_directory and answer its artifact_id for \
flash_firmware or debug_start_session; touches no hardware. Give image_path (inside the workspace and \
artifacts.allowed_roots) or filename with data_base64 (padded base64). The id is the sha256 of the bytes plus \
the lowercased extension, so the same bytes and extension give the same id. Needs artifacts.allow_upload. Fails \
with permission_denied, invalid_argument, artifact_not_found, artifact_validation_failed, artifact_too_large or \
unsafe_configured_path.",
        kind: Kind::Effect {
            destructive: false,
            idempotent: true,
        },
        open_world: false,
        schema: artifact_upload_schema,
        availability: Availability::Always,
    },
    ToolDef {
        name: "bench_run_start",
        title: "Declare a bench run",
        description: "Hold the named devices machine-wide for a sequence of calls, so no other agent or \
program (this one or the Python agentic-hil) can drive them until bench_run_stop or until this server ends. \
devices: [{kind: debugger|uart|can|power_supply, id}], id optional for the only debugger; all are resolved \
before any is locked and taken all or none. Touches no hardware. Fails with unknown_device, invalid_argument, \
run_already_active, or device_busy naming the holder (pass wait_s to wait up to 900 s).",
        kind: Kind::Effect {
            destructive: false,
            idempotent: false,
        },
        open_world: false,
        schema: bench_run_start_schema,
        availability: Availability::Always,
    },
    ToolDef {
        name: "bench_run_stop",
        title: "End the bench run",
        description: "End this server's run and release every device it held; ending when no run is open \
answers ok with run_was_active false. Touches no hardware. Next: bench_run_status to confirm nothing is held.",
        kind: Kind::Effect {
            destructive: false,
            idempotent: true,
        },
        open_world: false,
        schema: no_arguments,
        availability: Availability::Always,
    },
    ToolDef {
        name: "bench_run_status",
        title: "Bench run status",
        description: "Say whether this server has a run open, which devices it declared and holds, its label \
and owner. Reads only. Next: bench_run_stop to release, or bench_run_start to declare a run.",
        kind: Kind::ReadOnly,
        open_world: false,
        schema: no_arguments,
        availability: Availability::Always,
    },
    ToolDef {
        name: "get_last_report",
        title: "Last report",
        description: "Return the last report an audited hardware call recorded in this project, read from the \
trusted copy under the state root (not the workspace file), with canonical_audit: whether the call's log \
chain verifies and whether the workspace mirror still holds every record. Needs no permission and touches no \
hardware. Fails with report_not_found before any report exists, or report_state_damaged. Next: \
classify_last_error for the last failure.",
        kind: Kind::ReadOnly,
        open_world: false,
        schema: no_arguments,
        availability: Availability::Always,
    },
    ToolDef {
        name: "classify_last_error",
        title: "Classify the last failure",
        description: "Classify the last failed hardware call in this project, kept even after later successes: \
error_type, summary, likely_causes, source_tool, report_path, log_path, remediation and canonical_audit. Reads \
the trusted state under the state root; touches no hardware. Fails with report_not_found when nothing has \
failed yet. Next: follow remediation, or get_last_report for the full document.",
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
            assert_eq!(names[..2], ["debugger_info", "project_config_describe"]);
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
