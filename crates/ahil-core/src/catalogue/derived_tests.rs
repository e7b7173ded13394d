//! The tables derived from the declarations equal the string tables they replaced. The old lists
//! are written here once, as the expected values: a declaration that changes a tool's class fails
//! here and must be a reviewed change.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::*;

fn names_where(test: impl Fn(Gate) -> bool) -> BTreeSet<&'static str> {
    declarations()
        .filter(|d| test(d.gate))
        .map(|d| d.name)
        .collect()
}

fn set<'a>(names: &[&'a str]) -> BTreeSet<&'a str> {
    names.iter().copied().collect()
}

/// `AUDITED_TOOLS` of `audit/record.rs`.
const OLD_AUDITED: &[&str] = &[
    "debugger_probes_list",
    "probe_target",
    "flash_firmware",
    "reset_target",
    "debug_start_session",
    "debug_set_breakpoint",
    "debug_continue",
    "debug_symbol_info",
    "debug_symbol_value",
    "debug_dump_symbol_ihex",
    "com_session_start",
    "com_write",
    "com_read",
    "can_session_start",
    "can_send",
    "can_read",
    "power_supply_status",
    "power_supply_set",
    "power_supply_output",
    "power_supply_cycle",
    "project_config_adopt_hardware",
    "project_config_create",
];

/// `LEASED` of `bench/leases.rs`; every `debug_*` tool was leased besides.
const OLD_LEASED: &[&str] = &[
    "debugger_probes_list",
    "probe_target",
    "flash_firmware",
    "reset_target",
    "com_session_start",
    "com_session_stop",
    "com_write",
    "com_read",
    "can_session_start",
    "can_session_stop",
    "can_send",
    "can_read",
    "power_supply_status",
    "power_supply_set",
    "power_supply_output",
    "power_supply_cycle",
    "bench_run_stop",
];

const OLD_CONTAINMENT: &[&str] = &[
    "bench_run_stop",
    "com_session_stop",
    "can_session_stop",
    "debug_stop_session",
    "debug_halt",
    "debug_clear_breakpoints",
];

const OLD_SESSION_STARTS: &[&str] = &[
    "com_session_start",
    "can_session_start",
    "debug_start_session",
];

const OLD_SESSION_STOPS: &[&str] = &["com_session_stop", "can_session_stop", "debug_stop_session"];

/// `EFFECT_TOOLS` of `envelope.rs`.
const OLD_EFFECT: &[&str] = &[
    "flash_firmware",
    "reset_target",
    "debug_start_session",
    "debug_set_breakpoint",
    "debug_continue",
    "com_session_start",
    "com_write",
    "can_session_start",
    "can_send",
];

/// `PROVING_TOOLS` of `ownership/coordination/records.rs`.
const OLD_PROVING: &[&str] = &[
    "debugger_probes_list",
    "probe_target",
    "flash_firmware",
    "reset_target",
    "debug_start_session",
    "com_session_start",
    "can_session_start",
];

/// The RTT tools came after those tables, in the COM tools' classes (decision 0014).
const RTT_AUDITED: &[&str] = &["rtt_session_start", "rtt_write", "rtt_read"];
const RTT_LEASED: &[&str] = &[
    "rtt_session_start",
    "rtt_session_stop",
    "rtt_write",
    "rtt_read",
];

/// `old`'s names and `rtt`'s.
fn with_rtt<'a>(old: &[&'a str], rtt: &[&'a str]) -> BTreeSet<&'a str> {
    set(old).union(&set(rtt)).copied().collect()
}

/// `reasons::for_unconfirmed` as it was.
fn old_unconfirmed(tool: &str) -> &'static str {
    match tool {
        "debugger_probes_list" | "probe_target" => "debugger_readonly_target_state_unconfirmed",
        "flash_firmware" | "reset_target" => "debugger_result_unconfirmed",
        "debug_start_session" => "debug_session_start_unconfirmed",
        "debug_set_breakpoint" | "debug_clear_breakpoints" => {
            "debug_breakpoint_cleanup_unconfirmed"
        }
        "debug_continue" | "debug_halt" => "debug_target_state_unconfirmed",
        "debug_stop_session" => "debug_session_cleanup_unconfirmed",
        tool if tool.starts_with("debug_") => "debug_session_result_unconfirmed",
        "com_write" => "com_write_effect_unconfirmed",
        "rtt_write" => "rtt_write_effect_unconfirmed",
        tool if tool.starts_with("rtt_") => "rtt_effect_unconfirmed",
        tool if tool.starts_with("com_") => "com_effect_unconfirmed",
        "can_send" => "can_send_effect_unconfirmed",
        "can_read" => "can_read_effect_unconfirmed",
        tool if tool.starts_with("can_") => "can_effect_unconfirmed",
        tool if tool.starts_with("power_supply_") => "power_supply_state_unconfirmed",
        _ => "unknown_hardware_exception",
    }
}

/// `reasons::for_audit_broken` as it was.
fn old_audit_broken(tool: &str) -> &'static str {
    if tool.starts_with("debug_") {
        "debug_audit_broken"
    } else if tool == "com_write" {
        "com_write_audit_broken"
    } else if tool == "rtt_write" {
        "rtt_write_audit_broken"
    } else if tool.starts_with("rtt_") {
        "rtt_report_audit_broken"
    } else if tool.starts_with("com_") {
        "com_report_audit_broken"
    } else if tool.starts_with("can_") {
        "can_report_audit_broken"
    } else if tool.starts_with("power_supply_") {
        "power_supply_report_audit_broken"
    } else {
        "hardware_exception_audit_broken"
    }
}

#[test]
fn declarations_cover_every_tool_id_in_order() {
    for (at, declared) in declarations().enumerate() {
        assert_eq!(
            declared.id as usize, at,
            "{} is out of order",
            declared.name
        );
        assert_eq!(declared.id.name(), declared.name);
    }
    assert_eq!(
        ToolId::Doctor as usize + 1,
        declarations().count(),
        "the last ToolId is the last declaration"
    );
}

#[test]
fn every_declared_name_parses_to_its_tool_and_no_other_name_parses() {
    for declared in declarations() {
        assert_eq!(declared.name.parse::<ToolId>(), Ok(declared.id));
    }
    // Names the old prefix rules would have gated (`debug_*`, `com_*`) or fallen through to a reset.
    for name in [
        "debug_anything",
        "com_",
        "reset_targets",
        "flash_everything",
        "",
        "DEBUGGER_INFO",
    ] {
        assert_eq!(name.parse::<ToolId>(), Err(UnknownTool), "{name}");
    }
}

#[test]
fn the_audited_tools_are_the_ones_the_old_table_listed() {
    // The operator-only tools came after that table; every one of them is audited but the doctor,
    // which changes nothing (decision 0013).
    let operator: BTreeSet<&str> = declarations()
        .filter(|d| d.is_operator_only() && d.id != ToolId::Doctor)
        .map(|d| d.name)
        .collect();
    assert!(!operator.is_empty(), "the operator-only tools are declared");
    let audited = names_where(|g| g.audited);
    assert!(
        operator.is_subset(&audited),
        "operator-only tools are audited"
    );
    let agent_audited: BTreeSet<&str> = audited.difference(&operator).copied().collect();
    assert_eq!(agent_audited, with_rtt(OLD_AUDITED, RTT_AUDITED));
}

#[test]
fn the_lease_classes_are_the_ones_the_old_tables_gave() {
    let mut leased = with_rtt(OLD_LEASED, RTT_LEASED);
    leased.extend(
        declarations()
            .map(|d| d.name)
            .filter(|n| n.starts_with("debug_")),
    );
    assert_eq!(names_where(Gate::is_leased), leased);
    assert_eq!(
        names_where(Gate::is_containment),
        with_rtt(OLD_CONTAINMENT, &["rtt_session_stop"])
    );
    assert_eq!(
        names_where(Gate::starts_session),
        with_rtt(OLD_SESSION_STARTS, &["rtt_session_start"])
    );
    assert_eq!(
        names_where(Gate::stops_session),
        with_rtt(OLD_SESSION_STOPS, &["rtt_session_stop"])
    );
    assert_eq!(
        names_where(Gate::runs_without_lease_when_busy),
        set(&["bench_run_stop"])
    );
}

#[test]
fn the_incident_reasons_of_leased_tools_are_the_ones_the_old_matches_gave() {
    for declared in declarations().filter(|d| d.gate.is_leased()) {
        assert_eq!(
            declared.gate.unconfirmed,
            old_unconfirmed(declared.name),
            "{}",
            declared.name
        );
        assert_eq!(
            declared.gate.audit_broken,
            old_audit_broken(declared.name),
            "{}",
            declared.name
        );
    }
}

#[test]
fn the_status_effect_and_proving_sets_are_the_ones_the_old_tables_listed() {
    assert_eq!(
        names_where(|g| g.always_status),
        set(&["debugger_info", "project_config_describe"])
    );
    assert_eq!(
        names_where(|g| g.reports_effect),
        with_rtt(OLD_EFFECT, &["rtt_write"])
    );
    assert_eq!(names_where(|g| g.proves_no_contact), set(OLD_PROVING));
}

fn lease_name(gate: Gate) -> &'static str {
    match gate.lease {
        None => "-",
        Some(Lease::Call) => "call",
        Some(Lease::SessionStart) => "session start (kept)",
        Some(Lease::SessionStop) => "session stop (containment)",
        Some(Lease::Containment) => "containment",
        Some(Lease::RunEnd) => "run end (containment, goes on when busy)",
    }
}

/// The tool table of docs/TOOLS.md, as the declarations say it.
fn tool_table() -> String {
    let mut table = String::from(
        "| tool | audited | lease | incident when unconfirmed | always status |\n| --- | --- | --- | --- | --- |\n",
    );
    for declared in declarations() {
        let gate = declared.gate;
        let yes = |flag: bool| if flag { "yes" } else { "-" };
        let reason = if gate.is_leased() {
            gate.unconfirmed
        } else {
            "-"
        };
        writeln!(
            table,
            "| `{}` | {} | {} | {} | {} |",
            declared.name,
            yes(gate.audited),
            lease_name(gate),
            reason,
            yes(gate.always_status),
        )
        .expect("writing to a String cannot fail");
    }
    table
}

#[test]
fn the_tool_table_in_the_docs_is_the_declarations() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/TOOLS.md");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let table = text
        .split_once("<!-- tools:begin -->\n")
        .and_then(|(_, rest)| rest.split_once("<!-- tools:end -->"))
        .map(|(table, _)| table);
    let expected = tool_table();
    assert_eq!(
        table,
        Some(expected.as_str()),
        "docs/TOOLS.md's table between the tools markers must read:\n{expected}"
    );
}
