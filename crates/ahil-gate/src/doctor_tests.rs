use super::*;
use crate::testkit::{Fixture, NULL_EXECUTABLE, executable_line};

const OPENOCD_BANNER: &str = "echo 'Open On-Chip Debugger 0.12.0' >&2";
/// The version the doctor reads from the banner.
const OPENOCD_VERSION: &str = "Open On-Chip Debugger 0.12.0";

fn verdict(fixture: &Fixture, text: &str) -> Value {
    fixture.write_config(text);
    doctor(&fixture.workspace, &fixture.env).to_value()
}

fn finding<'v>(value: &'v Value, name: &str) -> &'v Value {
    value["findings"]
        .as_array()
        .and_then(|all| all.iter().find(|f| f["name"] == name))
        .unwrap_or_else(|| panic!("no {name} finding in {value}"))
}

/// The verdict on the starter with each `(from, to)` line edit.
fn verdict_on_starter_with(fixture: &Fixture, edits: &[(&str, &str)]) -> Value {
    verdict(fixture, &fixture.starter_with(edits))
}

/// The verdict on the starter whose debugger is pinned to a program `name` running `script`.
fn verdict_pinned_to(fixture: &Fixture, name: &str, script: &str) -> Value {
    let exe = fixture.tool(name, script);
    verdict_on_starter_with(fixture, &[(NULL_EXECUTABLE, &executable_line(&exe))])
}

#[test]
fn the_generated_starter_is_unbound_and_unusable() {
    let fixture = Fixture::new();
    fixture.tool("openocd", OPENOCD_BANNER); // on PATH: the starter is still not autodetected
    let value = verdict(&fixture, &fixture.starter());
    assert_eq!(value["ok"], false);
    assert_eq!(value["unhealthy"], json!(["bench_binding"]));
    let binding = finding(&value, "bench_binding");
    assert_eq!(binding["unbound"][0]["field"], "debuggers");
    assert_eq!(binding["unbound"][0]["entries"], json!(["dut"]));
    assert_eq!(binding["placeholders"][0]["field"], "target.controller");
    assert!(
        binding["summary"]
            .as_str()
            .is_some_and(|s| s.starts_with("debuggers.dut names no executable"))
    );
    assert_eq!(binding["verdict"], json!("unbound"));
    assert_eq!(
        &value["bench_binding"], binding,
        "the verdict also stands at the top"
    );
    assert!(
        value["next_step"]
            .as_str()
            .is_some_and(|s| s.contains("debuggers.dut.executable"))
    );
    assert!(value["config_status"].is_object());
}

#[test]
fn a_pinned_executable_binds_the_bench_despite_the_placeholder_controller() {
    let fixture = Fixture::new();
    let value = verdict_pinned_to(&fixture, "openocd-fake", OPENOCD_BANNER);
    assert_eq!(value["ok"], true, "{value}");
    assert_eq!(finding(&value, "bench_binding")["ok"], true);
    assert!(
        value["findings"]
            .as_array()
            .is_some_and(|all| all.iter().all(|f| f["name"] != "target_support")),
        "no pyOCD target was asked about: {value}"
    );
    assert_eq!(
        value["debuggers"]["dut"]["check"]["version"],
        OPENOCD_VERSION
    );
}

/// The starter's debugger given a probe id.
const PROBE_ID: (&str, &str) = ("    probe_id: null", "    probe_id: \"066DFF123\"");

/// An entry without an executable whose program the doctor finds on PATH: the entry's edit, the
/// program (name, script) and the version its check reports.
type Autodetected = (
    &'static str,
    (&'static str, &'static str),
    (&'static str, &'static str),
    &'static str,
);

#[rustfmt::skip]
const AUTODETECTED: &[Autodetected] = &[
    ("a probe id", PROBE_ID, ("openocd", OPENOCD_BANNER), OPENOCD_VERSION),
    ("a changed OpenOCD script", ("interface_cfg: \"interface/stlink.cfg\"", "interface_cfg: \"interface/cmsis-dap.cfg\""), ("openocd", OPENOCD_BANNER), OPENOCD_VERSION),
    ("a pyOCD entry", ("    type: \"openocd\"", "    type: \"pyocd\""), ("pyocd", "echo 0.36.0"), "0.36.0"),
    ("an ST-Link entry", ("    type: \"openocd\"", "    type: \"stlink\""), ("STM32_Programmer_CLI", "echo 'STM32CubeProgrammer version: 2.16.0'"), "STM32CubeProgrammer 2.16.0"),
];

#[test]
fn an_entry_with_a_probe_id_a_changed_script_or_another_type_autodetects_its_program_on_path() {
    for &(label, edit, (name, script), version) in AUTODETECTED {
        let fixture = Fixture::new();
        fixture.tool(name, script);
        let value = verdict_on_starter_with(&fixture, &[edit]);
        assert_eq!(value["ok"], true, "{label}: {value}");
        assert_eq!(
            value["debuggers"]["dut"]["check"]["version"], version,
            "{label}"
        );
    }
}

#[test]
fn a_probe_id_alone_does_not_bind_when_no_openocd_is_found() {
    let fixture = Fixture::new();
    let value = verdict_on_starter_with(&fixture, &[PROBE_ID]);
    assert_eq!(value["ok"], false);
    assert_eq!(value["unhealthy"], json!(["bench_binding"]));
}

#[test]
fn a_real_controller_alone_leaves_the_bench_unbound() {
    let fixture = Fixture::new();
    let real_controller = (
        "  controller: \"unknown-controller\"",
        "  controller: \"STM32F446RE\"",
    );
    let value = verdict_on_starter_with(&fixture, &[real_controller]);
    assert_eq!(value["unhealthy"], json!(["bench_binding"]));
    assert_eq!(finding(&value, "bench_binding")["placeholders"], json!([]));
}

#[test]
fn a_configuration_without_debuggers_is_bound() {
    let fixture = Fixture::new();
    let starter = fixture.starter();
    let start = starter.find("debuggers:\n").expect("debuggers section");
    let end = starter.find("\ndebug:\n").expect("debug section");
    let text = format!("{}debuggers: {{}}\n{}", &starter[..start], &starter[end..]);
    let value = verdict(&fixture, &text);
    assert_eq!(value["ok"], true, "{value}");
}

#[test]
fn a_failing_toolchain_makes_the_debuggers_finding_unhealthy() {
    let fixture = Fixture::new();
    let value = verdict_pinned_to(&fixture, "openocd-bad", "echo boom >&2\nexit 3");
    assert_eq!(value["unhealthy"], json!(["debuggers"]));
    assert_eq!(
        value["debuggers"]["dut"]["check"]["error_type"],
        "debugger_error"
    );
}

#[test]
fn a_missing_configuration_is_the_loaders_error() {
    let fixture = Fixture::new();
    let value = doctor(&fixture.workspace, &fixture.env).to_value();
    assert_eq!(value["ok"], false);
    assert_eq!(value["error_type"], "config_file_not_found");
    assert_eq!(value["tool"], "agentic_hil_doctor");
}

#[test]
fn an_unwritable_state_root_is_unhealthy() {
    let fixture = Fixture::new();
    let blocker = fixture.home.join("not-a-dir");
    std::fs::write(&blocker, "file").expect("write");
    let finding = check_state_root(&blocker.join("state"));
    assert!(!finding.ok);
}

#[test]
fn a_renamed_starter_entry_is_still_unbound() {
    let fixture = Fixture::new();
    fixture.tool("openocd", OPENOCD_BANNER);
    let value = verdict_on_starter_with(&fixture, &[("  dut:", "  board:")]);
    assert_eq!(
        finding(&value, "bench_binding")["unbound"][0]["entries"],
        json!(["board"])
    );
}

/// A pyOCD that knows two targets, one built in and one from a pack; `listing` replaces its list.
fn pyocd_with_targets(fixture: &Fixture, listing: &str) -> String {
    let exe = fixture.tool(
        "pyocd-fake",
        &format!(
            "case \"$*\" in\n  --version) echo 0.46.0 ;;\n  'json --targets --no-config') {listing} ;;\n  *) exit 9 ;;\nesac"
        ),
    );
    fixture.starter_with(&[
        ("    type: \"openocd\"", "    type: \"pyocd\""),
        ("    target_type: null", "    target_type: \"stm32f405rg\""),
        (NULL_EXECUTABLE, &executable_line(&exe)),
    ])
}

const TWO_TARGETS: &str = r#"echo '{"status": 0, "targets": [{"name": "stm32f103rc", "vendor": "STMicroelectronics", "part_number": "STM32F103RC", "source": "builtin"}, {"name": "stm32f407vg", "vendor": "STMicroelectronics", "part_number": "STM32F407VG", "source": "pack"}]}'"#;

#[test]
fn a_target_type_pyocd_does_not_list_is_unhealthy_and_names_its_pack_commands() {
    let fixture = Fixture::new();
    let value = verdict(&fixture, &pyocd_with_targets(&fixture, TWO_TARGETS));
    assert_eq!(value["ok"], false, "{value}");
    assert_eq!(value["unhealthy"], json!(["target_support"]));
    let support = &value["debuggers"]["dut"]["target_support"];
    assert_eq!(support["status"], "unsupported", "{support}");
    assert_eq!(support["error_type"], "target_type_invalid");
    assert_eq!(
        support["close_matches"],
        json!(["stm32f407vg", "stm32f103rc"])
    );
    assert_eq!(
        support["install_commands"][1],
        "pyocd pack install stm32f405rg"
    );
    assert!(
        value["next_step"]
            .as_str()
            .is_some_and(|s| s.contains("install_commands"))
    );
}

#[test]
fn a_target_type_from_an_installed_pack_is_supported() {
    let fixture = Fixture::new();
    let config = pyocd_with_targets(&fixture, TWO_TARGETS).replace(
        "target_type: \"stm32f405rg\"",
        "target_type: \"STM32F407VG\"",
    );
    let value = verdict(&fixture, &config);
    assert_eq!(value["ok"], true, "{value}");
    let support = &value["debuggers"]["dut"]["target_support"];
    assert_eq!(support["status"], "supported");
    assert_eq!(finding(&value, "target_support")["ok"], true);
    assert_eq!(support["source"], "pack");
    assert_eq!(support["part_number"], "STM32F407VG");
}

#[test]
fn a_target_list_pyocd_cannot_give_leaves_the_question_open_without_failing() {
    let fixture = Fixture::new();
    let value = verdict(
        &fixture,
        &pyocd_with_targets(&fixture, "echo 'pack index is corrupt' >&2; exit 1"),
    );
    assert_eq!(value["ok"], true, "{value}");
    let support = &value["debuggers"]["dut"]["target_support"];
    assert_eq!(support["status"], "undetermined");
    assert!(
        finding(&value, "target_support")["summary"]
            .as_str()
            .is_some_and(|s| s.contains("could not say")),
        "{value}"
    );
    assert!(
        support["reason"]
            .as_str()
            .is_some_and(|r| r.contains("pack index is corrupt")),
        "{support}"
    );
}
