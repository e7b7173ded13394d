use super::*;
use crate::testkit::{Fixture, NULL_EXECUTABLE, executable_line};

const OPENOCD_BANNER: &str = "echo 'Open On-Chip Debugger 0.12.0' >&2";

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

#[test]
fn the_generated_starter_is_unbound_and_unusable() {
    let fixture = Fixture::new();
    fixture.tool("openocd", OPENOCD_BANNER); // on PATH: the starter is still not autodetected
    let value = verdict(&fixture, &fixture.starter());
    assert_eq!(value["ok"], false);
    assert_eq!(value["unhealthy"], json!(["bench_binding"]));
    let binding = finding(&value, "bench_binding");
    assert_eq!(
        binding["unbound"],
        json!([{"field": "debuggers", "entries": ["dut"]}])
    );
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
    let exe = fixture.tool("openocd-fake", OPENOCD_BANNER);
    let value = verdict(
        &fixture,
        &fixture.starter_with(&[(NULL_EXECUTABLE, &executable_line(&exe))]),
    );
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
        "Open On-Chip Debugger 0.12.0"
    );
}

#[test]
fn a_probe_id_alone_does_not_bind_when_no_openocd_is_found() {
    let fixture = Fixture::new();
    let value = verdict(
        &fixture,
        &fixture.starter_with(&[("    probe_id: null", "    probe_id: \"066DFF123\"")]),
    );
    assert_eq!(value["ok"], false);
    assert_eq!(value["unhealthy"], json!(["bench_binding"]));
}

#[test]
fn a_probe_id_makes_the_entry_autodetect_openocd_on_path() {
    let fixture = Fixture::new();
    fixture.tool("openocd", OPENOCD_BANNER);
    let value = verdict(
        &fixture,
        &fixture.starter_with(&[("    probe_id: null", "    probe_id: \"066DFF123\"")]),
    );
    assert_eq!(value["ok"], true, "{value}");
}

#[test]
fn a_real_controller_alone_leaves_the_bench_unbound() {
    let fixture = Fixture::new();
    let value = verdict(
        &fixture,
        &fixture.starter_with(&[(
            "  controller: \"unknown-controller\"",
            "  controller: \"STM32F446RE\"",
        )]),
    );
    assert_eq!(value["unhealthy"], json!(["bench_binding"]));
    assert_eq!(finding(&value, "bench_binding")["placeholders"], json!([]));
}

#[test]
fn a_pyocd_entry_without_an_executable_autodetects_pyocd() {
    let fixture = Fixture::new();
    fixture.tool("pyocd", "echo 0.36.0");
    let value = verdict(
        &fixture,
        &fixture.starter_with(&[("    type: \"openocd\"", "    type: \"pyocd\"")]),
    );
    assert_eq!(value["ok"], true, "{value}");
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
    let exe = fixture.tool("openocd-bad", "echo boom >&2\nexit 3");
    let value = verdict(
        &fixture,
        &fixture.starter_with(&[(NULL_EXECUTABLE, &executable_line(&exe))]),
    );
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
fn a_changed_openocd_script_makes_the_entry_autodetect_openocd_on_path() {
    let fixture = Fixture::new();
    fixture.tool("openocd", OPENOCD_BANNER);
    let value = verdict(
        &fixture,
        &fixture.starter_with(&[(
            "interface_cfg: \"interface/stlink.cfg\"",
            "interface_cfg: \"interface/cmsis-dap.cfg\"",
        )]),
    );
    assert_eq!(value["ok"], true, "{value}");
}

#[test]
fn an_stlink_entry_without_an_executable_autodetects_the_programmer_cli() {
    let fixture = Fixture::new();
    fixture.tool(
        "STM32_Programmer_CLI",
        "echo 'STM32CubeProgrammer version: 2.16.0'",
    );
    let value = verdict(
        &fixture,
        &fixture.starter_with(&[("    type: \"openocd\"", "    type: \"stlink\"")]),
    );
    assert_eq!(value["ok"], true, "{value}");
    assert_eq!(
        value["debuggers"]["dut"]["check"]["version"],
        "STM32CubeProgrammer 2.16.0"
    );
}

#[test]
fn a_renamed_starter_entry_is_still_unbound() {
    let fixture = Fixture::new();
    fixture.tool("openocd", OPENOCD_BANNER);
    let value = verdict(&fixture, &fixture.starter_with(&[("  dut:", "  board:")]));
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
