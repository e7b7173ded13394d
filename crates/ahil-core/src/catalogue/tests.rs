use super::*;
use std::collections::BTreeSet;

/// The reference's own `tools/list` answer, from the agentic-hil 0.25.0 that
/// scripts/setup-debian.sh installs under `target/`, started with no configuration (it lists
/// the same tools either way).
fn reference() -> Vec<Value> {
    use std::io::{BufRead as _, Write as _};
    let program = std::env::var_os("AHIL_REFERENCE_BIN").map_or_else(
        || {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/reference-venv/bin/agentic-hil")
        },
        std::path::PathBuf::from,
    );
    assert!(
        program.exists(),
        "the reference agentic-hil 0.25.0 is missing at {}: run scripts/setup-debian.sh",
        program.display()
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let mut child = std::process::Command::new(&program)
        .arg("mcp-stdio")
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .env_remove("AGENTIC_HIL_CONFIG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the reference starts");
    let mut stdin = child.stdin.take().expect("stdin");
    for line in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "catalogue-test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ] {
        writeln!(stdin, "{line}").expect("the reference reads its stdin");
    }
    let stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let answer = stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(&line.expect("a line")).expect("JSON-RPC"))
        .find(|message| message["id"] == 2)
        .expect("the reference answers tools/list");
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        answer["result"]["nextCursor"].is_null(),
        "the reference's list fits one page"
    );
    answer["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .clone()
}

fn property_names(schema: &Value) -> BTreeSet<String> {
    schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// Tools the reference does not have (the RTT tools, issue #28): listed by us alone.
fn ours_alone(name: &str) -> bool {
    name.starts_with("rtt_")
}

#[test]
fn every_listed_tool_matches_the_reference_names_arguments_and_hints() {
    let reference = reference();
    for provisioned in [true, false] {
        for spec in tools(provisioned)
            .into_iter()
            .filter(|s| !ours_alone(&s.name))
        {
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
        if ours_alone(&spec.name) {
            continue;
        }
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
fn every_declaration_states_a_title_and_a_description_listed_or_not() {
    for def in declarations() {
        let spec = def.spec();
        assert!(!spec.title.is_empty(), "{} has no title", spec.name);
        assert!(
            !spec.description.is_empty(),
            "{} has no description",
            spec.name
        );
    }
}

#[test]
fn operator_commands_are_never_listed_and_a_declaration_is_listed_unless_it_says_so() {
    let listed: BTreeSet<_> = tools(true).into_iter().map(|t| t.name).collect();
    for def in declarations() {
        assert_eq!(
            listed.contains(def.name),
            !def.is_operator_only(),
            "{}",
            def.name
        );
    }
    assert!(ToolId::Doctor.declaration().is_operator_only());
    assert!(!ToolId::DebuggerInfo.declaration().is_operator_only());
}

#[test]
fn tool_names_are_unique() {
    let names: BTreeSet<_> = declarations().map(|d| d.name).collect();
    assert_eq!(names.len(), declarations().count());
}

#[test]
fn the_first_two_tools_are_listed_with_and_without_a_configuration() {
    for provisioned in [true, false] {
        let names: Vec<String> = tools(provisioned).into_iter().map(|t| t.name).collect();
        assert_eq!(names[..2], ["debugger_info", "project_config_describe"]);
    }
    assert!(tool(ToolId::DebuggerInfo, true).is_some());
    assert!(tool(ToolId::FlashFirmware, true).is_some());
    assert!(tool(ToolId::DebugStartSession, true).is_some());
}

#[test]
fn read_only_annotations_carry_only_the_read_only_and_open_world_hints() {
    let spec = tool(ToolId::DebuggerInfo, true).expect("listed");
    assert_eq!(
        spec.annotations(),
        json!({"title": "Debugger backend availability", "readOnlyHint": true, "openWorldHint": false})
    );
}

#[test]
fn lease_status_reports_succeed_on_ok_alone() {
    let mut outcome = crate::Outcome::ok("hardware_lease_status", "held");
    outcome.quarantined = Some(true);
    assert!(super::conclusive_success(&outcome));
    assert!(super::conclusive_success_value(&outcome.to_value()));
    outcome.tool = "probe_target".into();
    assert!(!super::conclusive_success(&outcome));
    assert!(!super::conclusive_success_value(&outcome.to_value()));
}
