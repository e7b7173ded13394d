//! The command line, black-box: exit codes, `--json`, and the documents each command prints.

mod support;

use std::os::unix::fs::PermissionsExt as _;

use serde_json::{Value, json};
use support::World;

const FAKE_OPENOCD: &str = "#!/bin/sh\necho 'Open On-Chip Debugger 0.12.0' >&2\nexit 0\n";

#[test]
fn no_subcommand_prints_usage_on_stderr_and_exits_two() {
    let out = World::new().run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage"));
}

#[test]
fn json_is_accepted_before_and_after_the_subcommand() {
    let world = World::new();
    let before = world.run(&["--json", "init"]);
    let after = world.run(&["init", "--json"]);
    for out in [before, after] {
        let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
        assert_eq!(doc["tool"], json!("agentic_hil_init"));
    }
}

#[test]
fn init_writes_once_and_then_keeps_the_file() {
    let world = World::new();
    let (first, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "{first}");
    assert!(first["steps"]["config"]["skipped"].is_null());
    let (second, _) = world.run_json(&["init"]);
    assert_eq!(second["steps"]["config"]["skipped"], json!(true));
    let text = std::fs::read_to_string(world.config_path()).expect("config written");
    assert!(text.contains("version: 3"));
    assert!(text.contains("allow_mass_erase: false"));
}

#[test]
fn init_in_the_home_directory_is_refused() {
    let world = World::new();
    let out = world
        .command()
        .current_dir(&world.home)
        .args(["init", "--json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["error_type"], json!("workspace_is_home"));
}

#[test]
fn doctor_is_red_while_unbound_and_green_once_the_debugger_names_a_toolchain() {
    let world = World::new();
    world.run_json(&["init"]);
    let (doc, code) = world.run_json(&["doctor"]);
    assert_eq!(code, Some(1), "{doc}");
    assert_eq!(doc["bench_binding"]["ok"], json!(false));

    let openocd = world.write_fake_tool("openocd", FAKE_OPENOCD);
    let path = world.config_path();
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(
        &path,
        text.replacen(
            "executable: null",
            &format!("executable: \"{}\"", openocd.display()),
            1,
        ),
    )
    .expect("write");
    let (doc, code) = world.run_json(&["doctor"]);
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(doc["bench_binding"]["ok"], json!(true));
}

#[test]
fn doctor_prints_one_line_per_finding_for_a_person() {
    let world = World::new();
    world.run_json(&["init"]);
    let out = world.run(&["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let first_words: Vec<_> = text
        .lines()
        .filter(|l| !l.starts_with(' '))
        .map(|l| l.split_whitespace().next().unwrap_or(""))
        .collect();
    assert_eq!(first_words, ["OK", "OK", "UNBOUND"], "{text}");
    assert!(text.lines().count() <= 6, "short: {text}");
}

#[test]
fn a_configuration_kept_inside_the_workspace_is_refused() {
    let world = World::new();
    world.run_json(&["init"]);
    let inside = world.workspace.join("config.yaml");
    std::fs::copy(world.config_path(), &inside).expect("copy");
    let out = world
        .command()
        .env("AGENTIC_HIL_CONFIG", &inside)
        .args(["doctor", "--json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["error_type"], json!("config_invalid"), "{doc}");
}

/// D2: every frontend reads the configuration through the one loader, so each refuses the same file.
#[test]
fn every_frontend_refuses_a_configuration_kept_inside_the_workspace() {
    let world = World::new();
    world.run_json(&["init"]);
    let inside = world.workspace.join("config.yaml");
    std::fs::copy(world.config_path(), &inside).expect("copy");
    std::fs::write(world.workspace.join("plan.yaml"), "version: 5\nsteps: []\n").expect("plan");
    for args in [
        &["doctor", "--json"][..],
        &["mcp-stdio"],
        &["com-stdio", "--port-id", "uart"],
        &["test-reactor", "--test-config", "plan.yaml"],
        &["sim", "status"],
        &["lease-status"],
    ] {
        let out = world
            .command()
            .env("AGENTIC_HIL_CONFIG", &inside)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("runs");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(1), "{args:?}: {said}");
        assert!(
            said.contains("config_invalid") && said.contains("outside the workspace"),
            "{args:?}: {said}"
        );
    }
}

#[test]
fn schema_prints_our_configuration_schema() {
    let out = World::new().run(&["schema"]);
    assert_eq!(out.status.code(), Some(0));
    let schema: Value = serde_json::from_slice(&out.stdout).expect("the schema is JSON");
    for section in [
        "debuggers",
        "com_ports",
        "can_buses",
        "power_supplies",
        "recovery",
    ] {
        assert!(
            schema["properties"][section].is_object(),
            "{section} is described"
        );
    }
}

#[test]
fn schema_output_refuses_to_overwrite_without_force_and_stays_in_the_workspace() {
    let world = World::new();
    let (doc, code) = world.run_json(&["schema", "--output", "config.schema.json"]);
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(doc["path"], json!("config.schema.json"));
    assert!(world.workspace.join("config.schema.json").is_file());

    let (doc, code) = world.run_json(&["schema", "--output", "config.schema.json"]);
    assert_eq!(code, Some(1));
    assert_eq!(doc["error_type"], json!("schema_exists"));
    let (_, code) = world.run_json(&["schema", "--output", "config.schema.json", "--force"]);
    assert_eq!(code, Some(0));

    let (doc, code) = world.run_json(&["schema", "--output", "../escape.json"]);
    assert_eq!(code, Some(1));
    assert_eq!(doc["error_type"], json!("unsafe_configured_path"));
    assert!(
        !world
            .workspace
            .parent()
            .expect("parent")
            .join("escape.json")
            .exists()
    );
}

#[test]
fn mcp_config_names_this_binary_with_mcp_stdio() {
    let out = World::new().run(&["mcp-config"]);
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON snippet");
    let server = &doc["mcpServers"]["agentic-hil"];
    assert_eq!(server["args"], json!(["mcp-stdio"]));
    let command = server["command"].as_str().expect("a command");
    assert_eq!(
        std::fs::canonicalize(command).expect("the command exists"),
        std::fs::canonicalize(World::binary()).expect("binary")
    );
}

#[test]
fn test_schema_prints_the_test_plan_schema() {
    let out = World::new().run(&["test-schema"]);
    assert_eq!(out.status.code(), Some(0));
    let schema: Value = serde_json::from_slice(&out.stdout).expect("the schema is JSON");
    assert!(
        schema["properties"]["steps"].is_object(),
        "plans have steps: {schema}"
    );
}

#[test]
fn check_plan_loads_a_good_plan_and_names_the_key_of_a_bad_one() {
    let world = World::new();
    let plans = world.workspace.join(".agentic-hil");
    std::fs::create_dir_all(&plans).expect("plan dir");
    std::fs::write(
        plans.join("testconfig.yaml"),
        "version: 3\nname: smoke\nsteps:\n  - {device: dut, action: reset, mode: run}\n",
    )
    .expect("good plan");
    let (doc, code) = world.run_json(&["check-plan"]);
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(doc["plans"][0]["name"], json!("smoke"));

    std::fs::write(
        plans.join("bad.yaml"),
        "version: 3\nsteps:\n  - {device: dut, action: reset, mode: run, colour: red}\n",
    )
    .expect("bad plan");
    let (doc, code) = world.run_json(&["check-plan", ".agentic-hil/bad.yaml"]);
    assert_eq!(code, Some(1), "{doc}");
    assert_eq!(doc["error_type"], json!("test_config_invalid"));
    assert_eq!(doc["field"], json!("steps[0].colour"));
}

#[test]
fn check_plan_reports_an_undeclared_device_and_fails_on_it_only_with_strict() {
    let world = World::new();
    let (_, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "init succeeds");
    std::fs::create_dir_all(world.workspace.join("t")).expect("plan dir");
    std::fs::write(
        world.workspace.join("t/other-bench.yaml"),
        "version: 5\nname: other\nsteps:\n  - {device: uart9, action: uart_open}\n  \
         - action: repeat\n    count: 2\n    steps:\n      \
         - {device: can7, action: can_open}\n      - {device: can7, action: can_close}\n  \
         - {device: uart9, action: uart_close}\n",
    )
    .expect("plan");
    std::fs::write(
        world.workspace.join("t/this-bench.yaml"),
        "version: 5\nname: this\nsteps:\n  - {device: dut, action: reset, mode: run}\n",
    )
    .expect("plan");
    let (doc, code) = world.run_json(&["check-plan", "t/other-bench.yaml", "t/this-bench.yaml"]);
    assert_eq!(
        code,
        Some(0),
        "a finding is not a failure without --strict: {doc}"
    );
    assert_eq!(doc["strict"], false, "{doc}");
    assert_eq!(doc["configuration"]["debuggers"], json!(["dut"]), "{doc}");
    assert_eq!(
        doc["plans"][0]["unconfigured_devices"],
        json!(["uart9", "can7"]),
        "{doc}"
    );
    assert!(
        doc["plans"][1].get("unconfigured_devices").is_none(),
        "{doc}"
    );

    let (doc, code) = world.run_json(&[
        "check-plan",
        "--strict",
        "t/other-bench.yaml",
        "t/this-bench.yaml",
    ]);
    assert_eq!(code, Some(1), "--strict fails on the finding: {doc}");
    assert_eq!(doc["ok"], false, "{doc}");
    assert_eq!(doc["error_type"], "unknown_device", "{doc}");
    let (doc, code) = world.run_json(&["check-plan", "--strict", "t/this-bench.yaml"]);
    assert_eq!(
        code,
        Some(0),
        "a plan for this bench passes --strict: {doc}"
    );
}

/// `debugger-probes` before `init`, with only `tools` on PATH (which the lookup must ignore).
fn probes_before_init(world: &World, tools: &std::path::Path) -> serde_json::Value {
    let out = world
        .command()
        .args(["debugger-probes", "--json"])
        .env("PATH", tools)
        .output()
        .expect("the binary runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

#[test]
fn debugger_probes_before_init_lists_the_usb_inventory_and_says_which_tools_it_looked_for() {
    let world = World::new();
    let empty = world.home.join("no-tools");
    std::fs::create_dir_all(&empty).expect("dir");
    let doc = probes_before_init(&world, &empty);
    assert_eq!(doc["ok"], json!(true), "{doc}");
    assert_eq!(doc["source"], json!("bootstrap"));
    assert_eq!(doc["discovered_by"], json!("usb_inventory"));
    assert_eq!(doc["complete"], json!(false), "a USB inventory is no count");
    // Tools are looked up in the system's own directories, whatever PATH says.
    let system_openocd = [
        "/usr/local/sbin",
        "/usr/local/bin",
        "/usr/sbin",
        "/usr/bin",
        "/sbin",
        "/bin",
    ]
    .iter()
    .map(|dir| std::path::Path::new(dir).join("openocd"))
    .find(|path| path.is_file());
    assert_eq!(
        doc["executable"],
        json!(system_openocd.as_ref().map(|p| p.display().to_string()))
    );
    let searched: Vec<(&str, bool)> = doc["tools_searched"]
        .as_array()
        .expect("tools_searched")
        .iter()
        .map(|t| (t["name"].as_str().unwrap_or(""), t["found"] == json!(true)))
        .collect();
    assert_eq!(
        searched,
        [
            ("STM32_Programmer_CLI", false),
            ("openocd", system_openocd.is_some())
        ]
    );
    assert!(doc["probes"].is_array(), "{doc}");
}

#[test]
fn debugger_probes_before_init_asks_stm32cubeprogrammer_when_it_is_installed() {
    let world = World::new();
    // Where STM32CubeProgrammer's installer puts it in the user's home; a PATH entry is not looked at.
    let tools = world
        .home
        .join("STMicroelectronics/STM32Cube/STM32CubeProgrammer/bin");
    std::fs::create_dir_all(&tools).expect("dir");
    let fake = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../ahil-sim/src/fakes/probe_cli.py");
    let programmer = tools.join("STM32_Programmer_CLI");
    std::fs::copy(fake, &programmer).expect("the fake is installed");
    std::fs::set_permissions(&programmer, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::write(tools.join("fake-scenario"), "ok").expect("scenario");
    let doc = probes_before_init(&world, &world.home.join("no-tools"));
    assert_eq!(doc["backend"], json!("stlink"), "{doc}");
    assert_eq!(
        doc["probes"][0]["probe_id"],
        json!("066DFF535254887767184038")
    );
    assert_eq!(doc["tools_searched"][0]["found"], json!(true));
}
