//! Black-box, end to end: symbol reads on a `type: stlink` debugger, which has no debug session. The
//! symbol is resolved (with the real gdb) in the ELF the last confirmed `flash_firmware` wrote, and the
//! bytes come from `STM32_Programmer_CLI -r` (ahil-sim's scripted fake), as Intel HEX parsed back.
//! The lookup alone (`debug_symbol_info`) and a plan's `read_symbol` without a `debug_start` step are
//! served the same way, here and in the reference 0.25.

mod support;

use std::path::PathBuf;

use serde_json::{Value, json};
use support::World;
use support::raw::Mcp;
use support::sim_board::copy_firmware_as;
use support::{call, fakes, ok};

struct Bench {
    world: World,
    tools: PathBuf,
    state: PathBuf,
}

impl Bench {
    fn new() -> Self {
        Self::of("stlink", "STM32_Programmer_CLI.py")
    }

    /// A bench whose one debugger, `probe`, is of `kind`, played by the fake installed as `exe_name`.
    fn of(kind: &str, exe_name: &str) -> Self {
        let world = World::new();
        let (_, code) = world.run_json(&["init"]);
        assert_eq!(code, Some(0), "init succeeds");
        let exe = fakes::install_probe_cli(&world, exe_name, "ok");
        let tools = fakes::tools(&world);
        let state = world.home.join(".local/state/agentic-hil");
        let config = format!(
            "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n\
             target:\n  name: board\n  controller: stm32f405\n\
             debuggers:\n  probe:\n    type: {kind}\n    executable: \"{exe}\"\n    \
             probe_id: 066DFF535254887767184038\n    \
             permissions:\n      allow_flash: true\n      allow_reset: true\n\
             artifacts:\n  allowed_roots: [fw]\n\
             debug:\n  allowed_symbols: [counter, no_such_symbol]\n",
            ws = world.workspace.display(),
            state = state.display(),
            exe = exe.display(),
        );
        std::fs::write(world.config_path(), config).expect("the test config is written");
        copy_firmware_as(&world, &[("ahil-fw-v1.elf", "fw.elf")]);
        Self {
            world,
            tools,
            state,
        }
    }

    fn scenario(&self, scenario: &str) {
        fakes::play(&self.tools, scenario);
    }

    fn reads(&self) -> Vec<Vec<String>> {
        fakes::calls(&self.tools)
            .into_iter()
            .filter(|argv| argv.contains(&"-r".to_owned()))
            .collect()
    }

    /// The private copy a confirmed flash recorded.
    fn recorded_elf(&self) -> PathBuf {
        let dir = self.state.join("debug/flashed");
        let entries: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("a flash recorded its ELF")
            .map(|e| e.expect("entry").path())
            .collect();
        assert_eq!(entries.len(), 1, "one probe's record");
        entries[0].join("image.elf")
    }
}

#[tokio::test]
async fn stlink_reads_and_dumps_a_symbol_of_the_elf_it_last_flashed() {
    let bench = Bench::new();
    let client = support::connect(&bench.world).await;

    let (doc, is_error) = call(&client, "debug_symbol_value", json!({"symbol": "counter"})).await;
    assert!(is_error, "nothing flashed yet: {doc}");
    assert_eq!(doc["error_type"], "symbol_source_not_available", "{doc}");
    assert_eq!(doc["target_contacted"], false, "{doc}");

    ok(
        &client,
        "flash_firmware",
        json!({"image_path": "fw/fw.elf"}),
    )
    .await;
    let doc = ok(&client, "debug_symbol_value", json!({"symbol": "counter"})).await;
    assert_eq!(doc["backend"], "stlink", "{doc}");
    assert_eq!(doc["resolved_from"], "debug_info", "{doc}");
    assert_eq!(doc["address"], "0x2000006c", "{doc}");
    assert_eq!(doc["size_bytes"], 4, "{doc}");
    // The fake reads back bytes 00 01 02 03; the ELF says little endian.
    assert_eq!(doc["hex"], "00010203", "{doc}");
    assert_eq!(doc["value_unsigned"], 0x0302_0100, "{doc}");
    assert_eq!(doc["byte_order"], "little", "{doc}");
    assert_eq!(doc["symbol_source"]["path"], "fw/fw.elf", "{doc}");
    assert_eq!(doc["side_effect_status"], "not_started", "{doc}");
    assert!(
        !doc.to_string().contains(&bench.state.display().to_string()),
        "no state-root path in the result: {doc}"
    );
    let read = bench.reads().pop().expect("the programmer read memory");
    let at = read.iter().position(|a| a == "-r").expect("-r");
    assert_eq!(read[at + 1..at + 3], ["0x2000006c", "4"], "{read:?}");
    assert!(
        read.contains(&"mode=HOTPLUG".to_owned()),
        "a read connects without a halt or a reset: {read:?}"
    );

    let doc = ok(
        &client,
        "debug_dump_symbol_ihex",
        json!({"symbol": "counter", "output_path": "fw/out/counter.hex"}),
    )
    .await;
    assert_eq!(doc["output"]["path"], "fw/out/counter.hex", "{doc}");
    let text = std::fs::read_to_string(bench.world.workspace.join("fw/out/counter.hex"))
        .expect("the dump is in the workspace");
    assert_eq!(
        text, ":020000042000DA\n:04006C00000102038A\n:00000001FF\n",
        "the dump holds what was read"
    );

    // A record that no longer matches its digest is not used.
    let recorded = bench.recorded_elf();
    let mut bytes = std::fs::read(&recorded).expect("the record");
    bytes.push(0);
    std::fs::write(&recorded, bytes).expect("tampered");
    let reads_before = bench.reads().len();
    let (doc, is_error) = call(&client, "debug_symbol_value", json!({"symbol": "counter"})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], "symbol_source_changed", "{doc}");
    assert_eq!(doc["target_contacted"], false, "{doc}");
    assert_eq!(bench.reads().len(), reads_before, "no read was made");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn stlink_refuses_unknown_symbols_and_reads_left_uncovered_by_the_hex() {
    let bench = Bench::new();
    let client = support::connect(&bench.world).await;
    ok(
        &client,
        "flash_firmware",
        json!({"image_path": "fw/fw.elf"}),
    )
    .await;

    let (doc, is_error) = call(
        &client,
        "debug_symbol_value",
        json!({"symbol": "no_such_symbol"}),
    )
    .await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], "symbol_not_found", "{doc}");
    assert_eq!(doc["symbol_table_lookup"], "not_found", "{doc}");
    assert_eq!(doc["target_contacted"], false, "{doc}");
    assert!(bench.reads().is_empty(), "no read was made");

    bench.scenario("hex-short");
    let (doc, is_error) = call(&client, "debug_symbol_value", json!({"symbol": "counter"})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], "memory_read_failed", "{doc}");
    assert_eq!(doc["target_contacted"], true, "{doc}");
    assert_eq!(
        doc["side_effect_status"], "not_started",
        "a read changes nothing: {doc}"
    );

    let (doc, is_error) = call(
        &client,
        "debug_start_session",
        json!({"image_path": "fw/fw.elf"}),
    )
    .await;
    assert!(is_error, "{doc}");
    assert_eq!(
        doc["error_type"], "not_supported",
        "ST-Link has no sessions: {doc}"
    );

    bench.scenario("no-target");
    let (doc, is_error) = call(&client, "debug_symbol_value", json!({"symbol": "counter"})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], "target_not_detected", "{doc}");
    client.cancel().await.expect("client closes");
}

/// Our server and the reference's, each on a bench of its own.
fn each_program() -> [std::path::PathBuf; 2] {
    [
        std::path::PathBuf::from(World::binary()),
        support::reference(),
    ]
}

fn answer(mcp: &mut Mcp, who: &str, tool: &str, args: &Value) -> (Value, bool) {
    let result = mcp.call(tool, args);
    let doc = result["structuredContent"].clone();
    assert!(doc.is_object(), "{tool} by {who}: {result}");
    (doc, result["isError"] == true)
}

#[test]
fn stlink_resolves_a_symbol_of_the_flashed_elf_without_a_session_here_and_in_the_reference() {
    for program in each_program() {
        let bench = Bench::new();
        let who = program.display().to_string();
        let mut mcp = Mcp::start(&bench.world, &program);
        let info = |mcp: &mut Mcp, symbol: &str| {
            answer(mcp, &who, "debug_symbol_info", &json!({"symbol": symbol}))
        };

        let (doc, is_error) = info(&mut mcp, "counter");
        assert!(is_error, "nothing flashed yet, {who}: {doc}");
        assert_eq!(
            doc["error_type"], "symbol_source_not_available",
            "{who}: {doc}"
        );
        assert_eq!(doc["target_contacted"], false, "{who}: {doc}");

        let (doc, is_error) = answer(
            &mut mcp,
            &who,
            "flash_firmware",
            &json!({"image_path": "fw/fw.elf"}),
        );
        assert!(!is_error, "{who}: {doc}");
        let (doc, is_error) = info(&mut mcp, "counter");
        assert!(!is_error, "{who}: {doc}");
        assert_eq!(doc["backend"], "stlink", "{who}: {doc}");
        assert_eq!(doc["symbol"], "counter", "{who}: {doc}");
        assert_eq!(doc["address"], "0x2000006c", "{who}: {doc}");
        assert_eq!(doc["size_bytes"], 4, "{who}: {doc}");
        assert_eq!(doc["resolved_from"], "debug_info", "{who}: {doc}");
        assert_eq!(doc["symbol_source"]["path"], "fw/fw.elf", "{who}: {doc}");
        assert_eq!(doc["target_contacted"], false, "{who}: {doc}");
        assert_eq!(doc["side_effect_status"], "not_started", "{who}: {doc}");

        let (doc, is_error) = info(&mut mcp, "no_such_symbol");
        assert!(is_error, "{who}: {doc}");
        assert_eq!(doc["error_type"], "symbol_not_found", "{who}: {doc}");
        assert_eq!(doc["symbol_table_lookup"], "not_found", "{who}: {doc}");
        assert_eq!(doc["target_contacted"], false, "{who}: {doc}");
        assert!(bench.reads().is_empty(), "a lookup reads no memory, {who}");
        mcp.close();
    }
}

/// A plan that flashes the ELF, then reads and dumps a symbol with no `debug_start` step.
const READS_WITHOUT_A_SESSION: &str = "version: 5\nsteps:\n\
     - {action: flash, image_path: fw/fw.elf}\n\
     - {device: probe, action: read_symbol, symbol: counter, size_bytes: 4, comparator: {equals: 50462976}}\n\
     - {device: probe, action: dump_memory, symbol: counter, output_path: fw/out/counter.hex}\n";

/// `READS_WITHOUT_A_SESSION` run by `program` on `bench`: the open server, the answer and whether
/// it is an error.
fn run_reads_without_a_session(
    bench: &Bench,
    program: &std::path::Path,
    who: &str,
) -> (Mcp, Value, bool) {
    let plan = bench
        .world
        .write_plan("reads.yaml", READS_WITHOUT_A_SESSION);
    let mut mcp = Mcp::start(&bench.world, program);
    let run = json!({"test_config_path": plan});
    let (doc, is_error) = answer(&mut mcp, who, "test_reactor_run", &run);
    (mcp, doc, is_error)
}

#[test]
fn a_plan_reads_a_stlink_symbol_without_debug_start_here_and_in_the_reference() {
    for program in each_program() {
        let who = program.display().to_string();

        let bench = Bench::new();
        let (mut mcp, doc, is_error) = run_reads_without_a_session(&bench, &program, &who);
        assert!(!is_error, "{who}: {doc}");
        let read = &doc["steps"][1]["result"];
        assert_eq!(read["ok"], true, "{who}: {doc}");
        assert_eq!(read["address"], "0x2000006c", "{who}: {read}");
        assert_eq!(read["hex"], "00010203", "{who}: {read}");
        assert_eq!(read["value_unsigned"], 0x0302_0100, "{who}: {read}");
        assert_eq!(doc["steps"][2]["result"]["ok"], true, "{who}: {doc}");
        assert!(
            bench.world.workspace.join("fw/out/counter.hex").is_file(),
            "{who}: the dump is written"
        );
        mcp.close();

        // Only a flash of this run counts: the ELF the tool flashed before the plan is not read.
        let bench = Bench::new();
        let plan = bench.world.write_plan(
            "unflashed.yaml",
            "version: 5\nsteps:\n - {device: probe, action: read_symbol, symbol: counter}\n",
        );
        let mut mcp = Mcp::start(&bench.world, &program);
        let flash = json!({"image_path": "fw/fw.elf"});
        let (doc, is_error) = answer(&mut mcp, &who, "flash_firmware", &flash);
        assert!(!is_error, "{who}: {doc}");
        let run = json!({"test_config_path": plan});
        let (doc, is_error) = answer(&mut mcp, &who, "test_reactor_run", &run);
        assert!(is_error, "{who}: {doc}");
        assert_eq!(
            doc["error_type"], "symbol_source_not_available",
            "{who}: {doc}"
        );
        assert_eq!(doc["failed_step"], 1, "{who}: {doc}");
        let read = &doc["steps"][0]["result"];
        assert_eq!(read["tool"], "debug_symbol_value", "{who}: {read}");
        assert_eq!(read["target_contacted"], false, "{who}: {read}");
        assert!(bench.reads().is_empty(), "{who}: nothing was read");
        mcp.close();

        // A debugger that reads symbols only in a session still needs the debug_start step.
        let bench = Bench::of("openocd", "openocd.py");
        let (mut mcp, doc, is_error) = run_reads_without_a_session(&bench, &program, &who);
        assert!(is_error, "{who}: {doc}");
        assert_eq!(doc["error_type"], "test_config_invalid", "{who}: {doc}");
        assert_eq!(
            doc["validation_error"]["field"], "steps[1].action",
            "{who}: {doc}"
        );
        assert_eq!(doc["steps"], json!([]), "{who}: {doc}");
        mcp.close();
    }
}
