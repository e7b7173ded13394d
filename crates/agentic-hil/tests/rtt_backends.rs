//! Black-box, end to end: RTT sessions on the backends this machine has no hardware for. probe-rs
//! runs in the binary's own worker against probe-rs's fake probe (the debug build's seam): with an
//! empty memory, and with a memory that is an ELF holding a control block. OpenOCD is
//! `ahil-sim`'s scripted fake, which answers the `rtt` commands and serves its channel on the
//! loopback port the gate reserved.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::shim::gone;
use support::{Client, World, call, ok, processes_with, refused};

const RTT_AT: &str = "    rtt:\n      control_block: \"0x20000100\"\n      channels:\n\
                      \x20       - {name: terminal, direction: up, index: 0}\n\
                      \x20       - {name: terminal_in, direction: down, index: 0}\n";

/// A world whose one debugger is `entry` (the YAML under its name, `dut`; given the world, so it
/// can name files in its HOME), with RTT reads and writes granted.
fn world(entry: impl FnOnce(&World) -> String) -> World {
    let world = World::new();
    let (_, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "init succeeds");
    let entry = entry(&world);
    let state = world.home.join(".local/state/agentic-hil");
    let config = format!(
        "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n\
         target:\n  name: board\n  controller: stm32f405\n\
         debuggers:\n  dut:\n{entry}{RTT_AT}\
         \x20   permissions:\n      allow_reset: true\n      allow_rtt_write: true\n",
        ws = world.workspace.display(),
        state = state.display(),
    );
    std::fs::write(world.config_path(), config).expect("the test config is written");
    world
}

/// The server, with the probe-rs worker's test seam set to `seam`.
async fn serve(world: &World, seam: &str) -> Client {
    let mut cmd = std::process::Command::new(World::binary());
    world.scrub(&mut cmd);
    cmd.env("AHIL_TEST_PROBE_RS_WORKER", seam);
    support::connect_command(cmd).await
}

/// Waits up to 5 s for no process to hold every one of `words`.
fn none_left(words: &[&str]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if processes_with(words).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn read_until(text: &str) -> Value {
    json!({"channel": "terminal", "until": text, "wait_timeout_s": 10})
}

// ---- probe-rs -------------------------------------------------------------------------------

/// A probe-rs entry; `probe_id` only marks this test's workers (the fake probe takes any).
fn probe_rs(probe_id: &str) -> String {
    format!(
        "    type: probe-rs\n    target_type: STM32F405RGTx\n    probe_id: {probe_id}\n    timeout_s: 20\n"
    )
}

/// A little-endian 32-bit ARM ELF with one loadable segment at 0x20000000 holding an RTT control
/// block at +0x100 (one up channel whose 64-byte ring at +0x200 holds `text`, one down channel at
/// +0x300), which probe-rs's fake probe serves as the target's memory.
fn rtt_elf(text: &[u8]) -> Vec<u8> {
    const RAM: u32 = 0x2000_0000;
    let mut data = vec![0u8; 0x400];
    data[0x100..0x10a].copy_from_slice(b"SEGGER RTT");
    let len = u32::try_from(text.len()).expect("a short text");
    let words = [
        1,
        1,
        0,
        RAM + 0x200,
        64,
        len,
        0,
        0,
        0,
        RAM + 0x300,
        16,
        0,
        0,
        0,
    ];
    for (i, word) in words.iter().enumerate() {
        let at = 0x110 + i * 4;
        data[at..at + 4].copy_from_slice(&u32::to_le_bytes(*word));
    }
    data[0x200..0x200 + text.len()].copy_from_slice(text);

    let shstrtab = b"\0.data\0.shstrtab\0";
    let data_at = 0x100u32;
    let strtab_at = data_at + 0x400;
    let sections_at = (strtab_at + u32::try_from(shstrtab.len()).expect("short") + 3) & !3;
    let mut elf = Vec::new();
    let push16 = |elf: &mut Vec<u8>, v: u16| elf.extend_from_slice(&v.to_le_bytes());
    let push32 = |elf: &mut Vec<u8>, v: u32| elf.extend_from_slice(&v.to_le_bytes());
    // The ELF header: ELFCLASS32, little-endian, EXEC, EM_ARM.
    elf.extend_from_slice(&[0x7f, b'E', b'L', b'F', 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    push16(&mut elf, 2);
    push16(&mut elf, 40);
    push32(&mut elf, 1);
    push32(&mut elf, RAM);
    push32(&mut elf, 52);
    push32(&mut elf, sections_at);
    push32(&mut elf, 0x0500_0000);
    for v in [52u16, 32, 1, 40, 3, 2] {
        push16(&mut elf, v);
    }
    // One PT_LOAD, read-write.
    for v in [1, data_at, RAM, RAM, 0x400, 0x400, 6, 4] {
        push32(&mut elf, v);
    }
    elf.resize(data_at as usize, 0);
    elf.extend_from_slice(&data);
    elf.extend_from_slice(shstrtab);
    elf.resize(sections_at as usize, 0);
    // Section headers: null, .data (PROGBITS, WA), .shstrtab (STRTAB).
    elf.extend_from_slice(&[0u8; 40]);
    for v in [1, 1, 3, RAM, data_at, 0x400, 0, 0, 4, 0] {
        push32(&mut elf, v);
    }
    let strtab_len = u32::try_from(shstrtab.len()).expect("short");
    for v in [7, 3, 0, 0, strtab_at, strtab_len, 0, 0, 1, 0] {
        push32(&mut elf, v);
    }
    elf
}

#[tokio::test]
async fn probe_rs_rtt_reads_the_up_channel_through_its_worker_from_the_fake_probes_memory() {
    let world = world(|_| probe_rs("RTT-ELF"));
    let elf = world.home.join("rtt-memory.elf");
    std::fs::write(&elf, rtt_elf(b"hello over probe-rs\n")).expect("the memory image");
    let seam = format!("fake-elf:{}", elf.display());
    let client = serve(&world, &seam).await;

    let doc = ok(&client, "rtt_session_start", json!({})).await;
    assert_eq!(doc["session"]["backend"], "probe-rs", "{doc}");
    assert_eq!(
        doc["session"]["control_block_address"], "0x20000100",
        "{doc}"
    );
    let workers: Vec<String> = processes_with(&["probe-rs-worker", "\"op\":\"memory\"", "RTT-ELF"])
        .iter()
        .map(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            format!("{pid}: {}", String::from_utf8_lossy(&cmdline))
        })
        .collect();
    assert_eq!(workers.len(), 1, "one worker holds the probe: {workers:?}");
    let doc = ok(&client, "rtt_read", read_until("\n")).await;
    assert_eq!(doc["data"]["text"], "hello over probe-rs\n", "{doc}");
    assert_eq!(doc["until_matched"], true, "{doc}");

    let doc = ok(&client, "rtt_session_stop", json!({})).await;
    assert_eq!(doc["was_active"], true, "{doc}");
    assert!(
        none_left(&["probe-rs-worker", "\"op\":\"memory\"", "RTT-ELF"]),
        "the worker ends with the session"
    );
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn probe_rs_rtt_on_the_fake_probes_empty_memory_is_refused_as_no_control_block_and_frees_the_probe()
 {
    let world = world(|_| probe_rs("RTT-EMPTY"));
    let client = serve(&world, "fake").await;
    let doc = refused(
        &client,
        "rtt_session_start",
        json!({}),
        "rtt_control_block_not_found",
    )
    .await;
    assert_eq!(doc["target_contacted"], false, "{doc}");
    assert!(
        doc["summary"]
            .as_str()
            .unwrap_or_default()
            .contains("0x20000100"),
        "{doc}"
    );
    // The device lock and the worker were let go: the next start is the same refusal, not busy.
    refused(
        &client,
        "rtt_session_start",
        json!({}),
        "rtt_control_block_not_found",
    )
    .await;
    assert!(none_left(&[
        "probe-rs-worker",
        "\"op\":\"memory\"",
        "RTT-EMPTY"
    ]));
    client.cancel().await.expect("the session closes");
}

// ---- OpenOCD --------------------------------------------------------------------------------

/// Installs the scripted OpenOCD in `tools/` under `scenario`; the debugger entry.
fn openocd(world: &World, scenario: &str) -> String {
    let tools = world.home.join("tools");
    std::fs::create_dir_all(&tools).expect("tools dir");
    let fake =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../ahil-sim/src/fakes/openocd_rtt_fake.py");
    let exe = tools.join("openocd.py");
    std::fs::copy(fake, &exe).expect("the fake is installed");
    std::fs::write(tools.join("fake-scenario"), scenario).expect("scenario");
    format!(
        "    type: openocd\n    executable: \"{}\"\n    probe_id: SIM0\n    timeout_s: 10\n",
        exe.display()
    )
}

fn fake_pid(tools: &Path) -> i32 {
    std::fs::read_to_string(tools.join("fake.pid"))
        .expect("the fake ran")
        .trim()
        .parse()
        .expect("a pid")
}

#[tokio::test]
async fn openocd_rtt_serves_the_channel_on_a_reserved_loopback_port_reads_it_and_echoes_a_write() {
    let world = world(|world| openocd(world, "ok"));
    let tools = world.home.join("tools");
    let client = support::connect(&world).await;

    let doc = ok(&client, "rtt_session_start", json!({})).await;
    assert_eq!(doc["session"]["backend"], "openocd", "{doc}");
    // OpenOCD searched from the configured address and said where it found the block.
    assert_eq!(
        doc["session"]["control_block_address"], "0x20000170",
        "{doc}"
    );
    let calls = std::fs::read_to_string(tools.join("calls.jsonl")).expect("the fake ran");
    let argv: Vec<String> =
        serde_json::from_str(calls.lines().last().expect("a run")).expect("argv");
    let port = argv
        .iter()
        .find_map(|a| a.strip_prefix("rtt server start "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|p| p.parse::<u16>().ok())
        .expect("an rtt server port");
    for expected in [
        "bindto 127.0.0.1".to_owned(),
        "gdb_port disabled".to_owned(),
        "tcl_port disabled".to_owned(),
        "telnet_port disabled".to_owned(),
        "rtt setup 0x20000100 24 \"SEGGER RTT\"".to_owned(),
        "rtt start".to_owned(),
        format!("rtt server start {port} 0"),
    ] {
        assert!(argv.contains(&expected), "{expected} in {argv:?}");
    }

    let doc = ok(&client, "rtt_read", read_until("\n")).await;
    assert_eq!(
        doc["data"]["text"], "boot ok (openocd rtt, channel 0)\n",
        "{doc}"
    );
    let doc = ok(
        &client,
        "rtt_write",
        json!({"channel": "terminal_in", "text": "ping\n"}),
    )
    .await;
    assert_eq!(doc["bytes_written"], 5, "{doc}");
    let doc = ok(&client, "rtt_read", read_until("ping\n")).await;
    assert_eq!(doc["data"]["text"], "echo: ping\n", "{doc}");

    let pid = fake_pid(&tools);
    let doc = ok(&client, "rtt_session_stop", json!({})).await;
    assert_eq!(doc["was_active"], true, "{doc}");
    assert!(gone(pid), "OpenOCD ends with the session");
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn an_openocd_rtt_server_listening_beyond_loopback_is_stopped_and_refused() {
    let world = world(|world| openocd(world, "exposed"));
    let tools = world.home.join("tools");
    let client = support::connect(&world).await;
    let doc = refused(
        &client,
        "rtt_session_start",
        json!({}),
        "probe_server_open_failed",
    )
    .await;
    assert_eq!(
        doc["backend_error_type"], "rtt_server_not_loopback",
        "{doc}"
    );
    assert!(
        doc["listen_addresses"].to_string().contains("0.0.0.0"),
        "{doc}"
    );
    // OpenOCD ran its init before the check: the target may have been touched.
    assert_eq!(doc["retry_safe"], false, "{doc}");
    assert!(gone(fake_pid(&tools)), "the exposed server was stopped");
    // Nothing stayed held: the next start meets the same check, not a busy device.
    refused(
        &client,
        "rtt_session_start",
        json!({}),
        "probe_server_open_failed",
    )
    .await;
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn the_real_openocd_takes_the_rtt_setup_and_without_a_probe_is_adapter_not_found_with_no_contact()
 {
    // Debian's package, which scripts/setup-debian.sh installs. No probe is attached and OpenOCD
    // cannot reach the emulated board (QEMU offers a gdb stub, not a debug adapter), so what is
    // shown is that OpenOCD 0.12 accepts our rtt setup (it runs before init) and that its failure
    // comes back classified, with nothing left running.
    let openocd = Path::new("/usr/bin/openocd");
    assert!(
        openocd.is_file(),
        "/usr/bin/openocd is missing: run scripts/setup-debian.sh"
    );
    let world = world(|_| {
        "    type: openocd\n    executable: /usr/bin/openocd\n    timeout_s: 10\n".to_owned()
    });
    let client = support::connect(&world).await;
    let doc = refused(&client, "rtt_session_start", json!({}), "adapter_not_found").await;
    assert_eq!(doc["target_contacted"], false, "{doc}");
    assert_eq!(doc["retry_safe"], true, "{doc}");
    let tail = doc["server_output_tail"].to_string();
    assert!(
        !tail.contains("rtt setup <address>"),
        "OpenOCD took the rtt setup: {tail}"
    );
    assert!(none_left(&["/usr/bin/openocd", "rtt setup"]));
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn an_openocd_that_exits_before_its_rtt_port_opens_is_a_classified_refusal() {
    let world = world(|world| openocd(world, "exit-early"));
    let client = support::connect(&world).await;
    let (doc, is_error) = call(&client, "rtt_session_start", json!({})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["backend"], "openocd", "{doc}");
    assert!(
        doc["server_output_tail"]
            .to_string()
            .contains("open failed"),
        "{doc}"
    );
    client.cancel().await.expect("the session closes");
}
