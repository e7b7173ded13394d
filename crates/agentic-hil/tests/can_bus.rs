//! Black-box: the built binary as an MCP server driving CAN buses whose adapter is the bridge
//! simulator (`ahil-can-bridge-sim` of ahil-sim, protocol v2 with a small ECU behind it), plus SocketCAN
//! refusals against this machine's real kernel through the fixed-path `ip`.

mod support;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::service::RunningService;
use serde_json::{Value, json};
use support::World;
use support::{call, frame_ids, refused};

type Client = RunningService<rmcp::RoleClient, ()>;

/// One bus of the test configuration: (name, simulator mode, period in ms, extra YAML lines).
type BusDef<'a> = (&'a str, &'a str, u32, &'a str);

const BUSES: &[BusDef<'static>] = &[
    ("ecu", "normal", 30, "allow_write: true"),
    ("quiet", "normal", 0, "allow_write: true"),
    (
        "small",
        "normal",
        0,
        "allow_write: true\n    max_buffer_frames: 4",
    ),
    (
        "fdbus",
        "normal",
        0,
        "allow_write: true\n    fd: true\n    data_bitrate: 2000000",
    ),
    (
        "listen",
        "normal",
        30,
        "allow_write: true\n    listen_only: true",
    ),
    (
        "liar",
        "no-listen-only",
        0,
        "allow_write: false\n    listen_only: true",
    ),
    (
        "silent",
        "silent",
        0,
        "allow_write: true\n    timeout_s: 0.5",
    ),
    ("crashopen", "crash-open", 0, "allow_write: true"),
    ("crashsession", "crash-session", 0, "allow_write: true"),
    ("sendfail", "send-fails", 0, "allow_write: true"),
    ("readonly", "normal", 0, "allow_write: false"),
    ("onbus", "refuse-on-bus", 0, "allow_write: true"),
    ("badframes", "bad-frames", 0, "allow_write: true"),
];

/// The `can_buses:` block: every bus in [`BUSES`] (each on its own channel, so each has its own
/// device lock) plus three SocketCAN buses on this machine's kernel.
fn can_buses(world: &World) -> String {
    let mut yaml = String::from("can_buses:\n");
    for (name, mode, period, extra) in BUSES {
        let bridge = world.write_fake_tool(
            &format!("bridge-{name}"),
            &format!(
                "#!/bin/sh\nexec \"{}\" --mode {mode} --period-ms {period}\n",
                support::can_bridge_simulator().display()
            ),
        );
        let (grants, rest) = extra.split_once('\n').unwrap_or((extra, ""));
        let timeout = if rest.contains("timeout_s") {
            ""
        } else {
            "    timeout_s: 2\n"
        };
        let _ = write!(
            yaml,
            "  {name}:\n    adapter: process\n    channel: sim-{name}\n    executable: \"{}\"\n{timeout}    permissions:\n      {grants}\n",
            bridge.display(),
        );
        for line in rest.lines() {
            let _ = writeln!(yaml, "{line}");
        }
    }
    yaml.push_str(
        "  kernel_missing:\n    adapter: socketcan\n    channel: ahilnone0\n  kernel_lo:\n    adapter: peak\n    channel: can77\n  kernel_listen:\n    adapter: socketcan\n    channel: lo\n    listen_only: true\n",
    );
    yaml.trim_end().to_owned()
}

fn write_buses(world: &World, config: &Path) {
    let text = std::fs::read_to_string(config).expect("config");
    assert!(
        text.contains("can_buses: {}"),
        "the template has an empty can_buses"
    );
    std::fs::write(config, text.replacen("can_buses: {}", &can_buses(world), 1))
        .expect("write config");
}

/// A world whose configuration lists the test buses.
fn world() -> World {
    let world = World::new();
    let (_, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "init succeeds");
    write_buses(&world, &world.config_path());
    world
}

/// A second workspace beside the world's, under the same HOME (so the same machine-wide device
/// locks), with its own configuration naming the same buses; answers its directory.
fn second_workspace(world: &World) -> PathBuf {
    let other = world.workspace.with_file_name("other-fw");
    std::fs::create_dir_all(&other).expect("second workspace");
    let out = world
        .command()
        .current_dir(&other)
        .args(["init", "--json"])
        .output()
        .expect("init runs");
    assert!(
        out.status.success(),
        "init: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let projects = world.home.join(".config/agentic-hil/projects");
    let config = std::fs::read_dir(&projects)
        .expect("projects")
        .map(|e| e.expect("entry").path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("other-fw"))
        })
        .expect("the second project directory")
        .join("config.yaml");
    write_buses(world, &config);
    other
}

async fn connect_in(world: &World, workspace: &Path) -> Client {
    use rmcp::ServiceExt;
    let mut cmd = std::process::Command::new(World::binary());
    world.scrub(&mut cmd);
    cmd.current_dir(workspace).arg("mcp-stdio");
    let transport = rmcp::transport::TokioChildProcess::new(tokio::process::Command::from(cmd))
        .expect("the server process starts");
    ().serve(transport)
        .await
        .expect("the MCP handshake succeeds")
}

async fn ok(client: &Client, tool: &str, args: Value) -> Value {
    let (doc, is_error) = call(client, tool, args).await;
    assert!(!is_error, "{tool} failed: {doc}");
    doc
}

#[tokio::test]
async fn the_ecu_answers_a_request_and_each_frame_is_read_once() {
    let world = world();
    let client = support::connect(&world).await;
    let started = ok(&client, "can_session_start", json!({"bus_id": "quiet"})).await;
    assert_eq!(started["already_active"], false);
    assert_eq!(started["adapter"], "process");
    assert_eq!(started["adapter_result"]["backend"], "ahil-can-bridge-sim");
    let again = ok(&client, "can_session_start", json!({"bus_id": "quiet"})).await;
    assert_eq!(again["already_active"], true, "{again}");
    assert_eq!(again["adapter"], "process", "{again}");

    let sent = ok(
        &client,
        "can_send",
        json!({"bus_id": "quiet", "frame_id": "0x7E0", "data_hex": "10 01"}),
    )
    .await;
    assert_eq!(
        sent["frame"],
        json!({"id": 0x7e0, "id_hex": "0x7e0", "extended": false, "rtr": false, "data_hex": "1001", "dlc": 2})
    );
    let read = ok(
        &client,
        "can_read",
        json!({"bus_id": "quiet", "until_id": 0x7e8, "wait_timeout_s": 5}),
    )
    .await;
    assert_eq!(read["until_matched"], true, "{read}");
    let last = read["frames"].as_array().and_then(|f| f.last()).cloned();
    assert_eq!(last.map(|f| f["data_hex"].clone()), Some(json!("5001")));
    let again = ok(&client, "can_read", json!({"bus_id": "quiet"})).await;
    assert_eq!(
        again["frames_read"], 0,
        "a frame is handed out once: {again}"
    );

    let stopped = ok(&client, "can_session_stop", json!({"bus_id": "quiet"})).await;
    assert_eq!(stopped["was_active"], true);
    assert_eq!(stopped["close_result"]["safe_state_confirmed"], true);
    assert_eq!(stopped["close_result"]["process_reaped"], true);
    // The session log is in the workspace: start, the frame sent, the frames read, stop.
    let log_path = stopped["log_path"].as_str().expect("a log path");
    assert!(!log_path.starts_with('/'), "workspace-relative: {log_path}");
    let log = std::fs::read_to_string(world.workspace.join(log_path)).expect("the session log");
    let events: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(
        events.first().map(|e| e["event"].clone()),
        Some(json!("start"))
    );
    assert!(
        events
            .iter()
            .any(|e| e["direction"] == "tx" && e["frame"]["id"] == 0x7e0)
    );
    assert!(events.iter().any(|e| e["direction"] == "rx"));
    assert_eq!(
        events.last().map(|e| e["event"].clone()),
        Some(json!("stop"))
    );
    let report = ok(&client, "get_last_report", json!({})).await;
    assert_eq!(report["ok"], true, "{report}");
    let twice = ok(&client, "can_session_stop", json!({"bus_id": "quiet"})).await;
    assert_eq!(twice["was_active"], false);
    refused(
        &client,
        "can_read",
        json!({"bus_id": "quiet"}),
        "session_not_active",
    )
    .await;
}

#[tokio::test]
async fn the_periodic_frame_arrives_and_a_full_queue_counts_what_it_dropped() {
    let world = world();
    let client = support::connect(&world).await;
    ok(&client, "can_session_start", json!({"bus_id": "ecu"})).await;
    let read = ok(
        &client,
        "can_read",
        json!({"bus_id": "ecu", "until_id": 0x100, "wait_timeout_s": 5}),
    )
    .await;
    assert!(frame_ids(&read).contains(&0x100), "{read}");

    ok(&client, "can_session_start", json!({"bus_id": "small"})).await;
    ok(
        &client,
        "can_send",
        json!({"bus_id": "small", "frame_id": 0x7df, "data_hex": "000a"}),
    )
    .await;
    // The burst is ten frames into a queue of four: the oldest six go, counted.
    let mut dropped = 0;
    for _ in 0..50 {
        let status = ok(&client, "can_buses_list", json!({})).await;
        dropped = status["buses"]["small"]["session"]["dropped_frames"]
            .as_u64()
            .unwrap_or(0);
        if dropped >= 6 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(dropped, 6);
    let read = ok(&client, "can_read", json!({"bus_id": "small"})).await;
    assert_eq!(read["frames_read"], 4, "{read}");
    assert_eq!(read["dropped_frames"], 6);
    assert_eq!(
        read["frames"][0]["data_hex"], "00000006",
        "the newest four are kept: {read}"
    );
    refused(
        &client,
        "can_read",
        json!({"bus_id": "small", "max_frames": 5}),
        "invalid_argument",
    )
    .await;
}

#[tokio::test]
async fn classic_and_fd_buses_apply_their_own_frame_rules() {
    let world = world();
    let client = support::connect(&world).await;
    ok(&client, "can_session_start", json!({"bus_id": "quiet"})).await;
    ok(&client, "can_session_start", json!({"bus_id": "fdbus"})).await;
    refused(
        &client,
        "can_send",
        json!({"bus_id": "quiet", "frame_id": 1, "data_hex": "000102030405060708"}),
        "can_classic_frame_too_large",
    )
    .await;
    ok(
        &client,
        "can_send",
        json!({"bus_id": "quiet", "frame_id": 1, "rtr": true}),
    )
    .await;
    let twelve = "00".repeat(12);
    ok(
        &client,
        "can_send",
        json!({"bus_id": "fdbus", "frame_id": "0x1FFFFFFF", "extended": true, "data_hex": twelve}),
    )
    .await;
    ok(
        &client,
        "can_send",
        json!({"bus_id": "fdbus", "frame_id": 2, "data_hex": "ab".repeat(64)}),
    )
    .await;
    let bad = refused(
        &client,
        "can_send",
        json!({"bus_id": "fdbus", "frame_id": 2, "data_hex": "00".repeat(9)}),
        "can_fd_frame_length_invalid",
    )
    .await;
    assert_eq!(bad["bytes_requested"], 9);
    assert!(
        bad["allowed_lengths"]
            .as_array()
            .is_some_and(|l| l.contains(&json!(12)))
    );
    refused(
        &client,
        "can_send",
        json!({"bus_id": "fdbus", "frame_id": 2, "rtr": true}),
        "can_fd_remote_frame_unsupported",
    )
    .await;
    refused(
        &client,
        "can_send",
        json!({"bus_id": "quiet", "frame_id": "0x800"}),
        "invalid_argument",
    )
    .await;
    refused(
        &client,
        "can_send",
        json!({"bus_id": "quiet", "frame_id": 1, "data_hex": "abc"}),
        "invalid_argument",
    )
    .await;
}

#[tokio::test]
async fn a_listen_only_bus_opens_only_when_the_bridge_confirms_and_never_sends() {
    let world = world();
    let client = support::connect(&world).await;
    let started = ok(&client, "can_session_start", json!({"bus_id": "listen"})).await;
    assert_eq!(started["adapter_result"]["listen_only"], true, "{started}");
    assert_eq!(
        started["adapter_result"]["listen_only_enforcement"],
        "bridge_confirmed"
    );
    let refusal = refused(
        &client,
        "can_send",
        json!({"bus_id": "listen", "frame_id": 0x7e0, "data_hex": "1001"}),
        "can_listen_only_mode",
    )
    .await;
    assert_eq!(refusal["retry_safe"], false);
    let read = ok(
        &client,
        "can_read",
        json!({"bus_id": "listen", "until_id": 0x100, "wait_timeout_s": 5}),
    )
    .await;
    assert!(
        frame_ids(&read).contains(&0x100),
        "listening still reads: {read}"
    );

    // A bridge that opens without echoing listen-only is closed again and refused.
    let unconfirmed = refused(
        &client,
        "can_session_start",
        json!({"bus_id": "liar"}),
        "can_listen_only_unconfirmed",
    )
    .await;
    assert_ne!(unconfirmed["retry_safe"], true);
    let list = ok(&client, "can_buses_list", json!({})).await;
    assert_eq!(list["buses"]["liar"]["session_active"], false);
    // Refused before any driver call even with no session and no write grant.
    refused(
        &client,
        "can_send",
        json!({"bus_id": "liar", "frame_id": 1}),
        "can_listen_only_mode",
    )
    .await;
}

#[tokio::test]
async fn sockets_are_refused_from_the_kernels_own_report_before_contact() {
    let world = world();
    let client = support::connect(&world).await;
    let missing = refused(
        &client,
        "can_session_start",
        json!({"bus_id": "kernel_missing"}),
        "can_interface_not_found",
    )
    .await;
    assert_eq!(missing["target_contacted"], false);
    assert_eq!(missing["retry_safe"], true);
    refused(
        &client,
        "can_session_start",
        json!({"bus_id": "kernel_lo"}),
        "can_interface_not_found",
    )
    .await;
    let unsupported = refused(
        &client,
        "can_session_start",
        json!({"bus_id": "kernel_listen"}),
        "can_listen_only_unsupported",
    )
    .await;
    assert_eq!(unsupported["target_contacted"], false);
    assert_eq!(
        unsupported["link_state"]["interface"], "lo",
        "{unsupported}"
    );
    let list = ok(&client, "can_buses_list", json!({})).await;
    assert_eq!(list["buses"]["kernel_lo"]["effective_adapter"], "socketcan");
    assert_eq!(list["buses"]["kernel_lo"]["bitrate_verified"], false);
    assert_eq!(
        list["buses"]["listen"]["listen_only_enforcement"],
        "bridge_confirmed"
    );
}

#[tokio::test]
async fn an_ip_planted_on_path_cannot_vouch_for_listen_only() {
    let world = world();
    // The agent's `ip`, first on the server's PATH, claims `lo` is a listen-only CAN controller.
    let planted = world.workspace.join("bin");
    std::fs::create_dir_all(&planted).expect("bin dir");
    let ran = planted.join("ip-ran");
    let report = r#"[{"ifname":"lo","flags":["UP"],"operstate":"UP","linkinfo":{"info_kind":"can","info_data":{"ctrlmode":["LISTEN-ONLY"]}}}]"#;
    std::fs::write(
        planted.join("ip"),
        format!("#!/bin/sh\ntouch \"{}\"\necho '{report}'\n", ran.display()),
    )
    .expect("the planted ip is written");
    support::make_executable(&planted.join("ip"));
    let mut path = std::ffi::OsString::from(&planted);
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    let mut cmd = std::process::Command::new(World::binary());
    world.scrub(&mut cmd);
    cmd.env("PATH", path).arg("mcp-stdio");
    let client = {
        use rmcp::ServiceExt;
        let transport = rmcp::transport::TokioChildProcess::new(tokio::process::Command::from(cmd))
            .expect("the server process starts");
        ().serve(transport)
            .await
            .expect("the MCP handshake succeeds")
    };
    let (doc, is_error) = call(
        &client,
        "can_session_start",
        json!({"bus_id": "kernel_listen"}),
    )
    .await;
    assert!(is_error, "lo is no listen-only controller: {doc}");
    assert!(!ran.exists(), "the planted ip was run: {doc}");
    // The fixed-path `ip` told the truth about `lo`.
    assert_eq!(doc["error_type"], "can_listen_only_unsupported", "{doc}");
    assert_eq!(doc["link_state"]["info_kind"], Value::Null, "{doc}");
    assert_eq!(doc["target_contacted"], false, "{doc}");
}

#[tokio::test]
async fn a_misbehaving_bridge_is_refused_with_its_failure_named() {
    let world = world();
    let client = support::connect(&world).await;
    let silent = refused(
        &client,
        "can_session_start",
        json!({"bus_id": "silent"}),
        "can_adapter_timeout",
    )
    .await;
    assert_eq!(silent["retry_safe"], false, "{silent}");
    let crashed = refused(
        &client,
        "can_session_start",
        json!({"bus_id": "crashopen"}),
        "can_adapter_process_exited",
    )
    .await;
    assert!(
        crashed["stderr_tail"]
            .as_str()
            .is_some_and(|t| t.contains("simulated crash")),
        "{crashed}"
    );
    let on_bus = refused(
        &client,
        "can_session_start",
        json!({"bus_id": "onbus"}),
        "can_adapter_open_failed",
    )
    .await;
    assert_ne!(on_bus["side_effect_committed"], false, "{on_bus}");
    // None of these left a lock behind: a second server can take every one of them.
    let list = ok(&client, "can_buses_list", json!({})).await;
    for bus in ["silent", "crashopen", "onbus"] {
        assert_eq!(list["buses"][bus]["session_active"], false);
    }
    // Not cleared: a clearing start reads first and is refused (tests/reference_error_types.rs).
    let args = json!({"bus_id": "badframes", "clear_rx_queue": false});
    ok(&client, "can_session_start", args).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    refused(
        &client,
        "can_read",
        json!({"bus_id": "badframes"}),
        "can_adapter_invalid_response",
    )
    .await;
    ok(&client, "can_session_stop", json!({"bus_id": "badframes"})).await;
}

#[tokio::test]
async fn a_failed_send_and_a_crash_mid_session_leave_cleanup_required() {
    let world = world();
    let client = support::connect(&world).await;
    ok(&client, "can_session_start", json!({"bus_id": "sendfail"})).await;
    let failed = refused(
        &client,
        "can_send",
        json!({"bus_id": "sendfail", "frame_id": 1}),
        "can_send_failed",
    )
    .await;
    assert_eq!(failed["cleanup_required"], true, "{failed}");
    assert!(
        failed["cleanup_reasons"]
            .as_array()
            .is_some_and(|r| r.contains(&json!("can_send_failed"))),
        "{failed}"
    );

    ok(
        &client,
        "can_session_start",
        json!({"bus_id": "crashsession"}),
    )
    .await;
    let crashed = refused(
        &client,
        "can_send",
        json!({"bus_id": "crashsession", "frame_id": 1}),
        "can_adapter_process_exited",
    )
    .await;
    assert_eq!(crashed["cleanup_required"], true, "{crashed}");
    refused(
        &client,
        "can_read",
        json!({"bus_id": "crashsession"}),
        "can_adapter_process_exited",
    )
    .await;
    let stopped = refused(
        &client,
        "can_session_stop",
        json!({"bus_id": "crashsession"}),
        "bridge_safe_state_unconfirmed",
    )
    .await;
    assert_eq!(stopped["was_active"], true);
    assert_eq!(stopped["close_result"]["process_reaped"], true);
    assert_eq!(stopped["cleanup_required"], true);
    // The crashed bridge was reaped and its lock released: the bus opens again.
    ok(
        &client,
        "can_session_start",
        json!({"bus_id": "crashsession"}),
    )
    .await;
}

#[tokio::test]
async fn two_servers_cannot_own_one_bus() {
    let world = world();
    let other = second_workspace(&world);
    let first = support::connect(&world).await;
    let second = connect_in(&world, &other).await;
    ok(&first, "can_session_start", json!({"bus_id": "quiet"})).await;
    let busy = refused(
        &second,
        "can_session_start",
        json!({"bus_id": "quiet"}),
        "device_busy",
    )
    .await;
    assert_eq!(busy["retry_safe"], true, "{busy}");
    ok(&first, "can_session_stop", json!({"bus_id": "quiet"})).await;
    ok(&second, "can_session_start", json!({"bus_id": "quiet"})).await;
    // A server that goes away frees the bus at once (the kernel lock dies with it).
    drop(second);
    let mut taken = false;
    for _ in 0..50 {
        let (doc, is_error) = call(&first, "can_session_start", json!({"bus_id": "quiet"})).await;
        if !is_error {
            taken = true;
            break;
        }
        assert_eq!(doc["error_type"], "device_busy", "{doc}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(taken, "the bus is free once the other server is gone");
}

#[tokio::test]
async fn unknown_buses_participants_and_missing_grants_are_refused_before_any_adapter() {
    let world = world();
    let client = support::connect(&world).await;
    let unknown = refused(
        &client,
        "can_session_start",
        json!({"bus_id": "nope"}),
        "can_bus_not_configured",
    )
    .await;
    assert!(
        unknown["configured_buses"]
            .as_array()
            .is_some_and(|b| b.contains(&json!("ecu")))
    );
    refused(
        &client,
        "can_session_start",
        json!({"bus_id": "quiet", "participant": "tester"}),
        "can_participant_not_configured",
    )
    .await;
    ok(&client, "can_session_start", json!({"bus_id": "readonly"})).await;
    let denied = refused(
        &client,
        "can_send",
        json!({"bus_id": "readonly", "frame_id": 1}),
        "permission_denied",
    )
    .await;
    assert_eq!(
        denied["permission"],
        "can_buses.readonly.permissions.allow_write"
    );
    refused(
        &client,
        "can_send",
        json!({"bus_id": "quiet", "frame_id": 1}),
        "session_not_active",
    )
    .await;
    let list = ok(&client, "can_buses_list", json!({})).await;
    assert_eq!(
        list["supported_adapters"],
        json!(["peak", "socketcan", "process"])
    );
    assert_eq!(list["buses"]["readonly"]["session_active"], true);
}

/// The reference 0.25.0 with the same configuration drives the same simulator: it speaks the protocol
/// the reference's own process bridge expects, and both refuse an unconfirmed listen-only alike.
#[tokio::test]
async fn the_reference_drives_the_same_bridge_simulator() {
    use rmcp::ServiceExt;
    let reference = support::reference();
    let world = world();
    let mut cmd = std::process::Command::new(reference);
    world.scrub(&mut cmd);
    cmd.arg("mcp-stdio");
    let transport = rmcp::transport::TokioChildProcess::new(tokio::process::Command::from(cmd))
        .expect("the reference starts");
    let client: Client = ().serve(transport).await.expect("the reference answers");
    ok(&client, "can_session_start", json!({"bus_id": "quiet"})).await;
    ok(
        &client,
        "can_send",
        json!({"bus_id": "quiet", "frame_id": "0x7E0", "data_hex": "1001"}),
    )
    .await;
    let read = ok(
        &client,
        "can_read",
        json!({"bus_id": "quiet", "until_id": 0x7e8, "wait_timeout_s": 5}),
    )
    .await;
    assert!(frame_ids(&read).contains(&0x7e8), "{read}");
    ok(&client, "can_session_stop", json!({"bus_id": "quiet"})).await;
    refused(
        &client,
        "can_session_start",
        json!({"bus_id": "liar"}),
        "can_listen_only_unconfirmed",
    )
    .await;
    let listen = ok(&client, "can_session_start", json!({"bus_id": "listen"})).await;
    assert_eq!(listen["ok"], true);
    refused(
        &client,
        "can_send",
        json!({"bus_id": "listen", "frame_id": 1}),
        "can_listen_only_mode",
    )
    .await;
    ok(&client, "can_session_stop", json!({"bus_id": "listen"})).await;
}

/// Whether `pid` still runs (a zombie waiting for a reaper has stopped running).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

#[test]
fn a_bridge_that_ignores_eof_dies_with_a_server_killed_by_sigkill() {
    let world = world();
    let pid_file = world.home.join("lingering-bridge.pid");
    // The simulator leaves at EOF; the script around it then lingers, as a careless bridge would.
    let bridge = world.write_fake_tool(
        "bridge-lingering",
        &format!(
            "#!/bin/sh\necho $$ > \"{}\"\n\"{}\" --mode normal --period-ms 0\nexec sleep 300\n",
            pid_file.display(),
            support::can_bridge_simulator().display()
        ),
    );
    let config = world.config_path();
    let text = std::fs::read_to_string(&config).expect("config");
    let bus = format!(
        "can_buses:\n  lingering:\n    adapter: process\n    channel: sim-lingering\n    executable: \"{}\"\n    timeout_s: 2\n    permissions:\n      allow_write: true\n",
        bridge.display()
    );
    std::fs::write(&config, text.replacen("can_buses:\n", &bus, 1)).expect("write config");

    let mut server = support::raw::Mcp::ours(&world);
    let started = server.call("can_session_start", &json!({"bus_id": "lingering"}));
    assert_eq!(started["isError"], false, "{started}");
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .expect("the bridge wrote its pid")
        .trim()
        .parse()
        .expect("a pid");
    assert!(running(pid), "the bridge runs while its session is open");

    // No destructor runs under SIGKILL: only the keeper can end the bridge now.
    server.kill9();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while running(pid) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !running(pid),
        "the bridge (pid {pid}) outlived the server that started it"
    );
}

#[test]
fn a_cancelled_read_until_an_identifier_takes_no_frame_and_holds_up_no_later_read() {
    let world = world();
    let mut server = support::raw::Mcp::ours(&world);
    let started = server.envelope("can_session_start", &json!({"bus_id": "quiet"}));
    assert_eq!(started["ok"], true, "{started}");
    let read = support::can_read_after_a_cancelled_one(
        &mut server,
        &world,
        &json!({"bus_id": "quiet", "frame_id": "0x7E0", "data_hex": "10 01"}),
        &json!({"bus_id": "quiet", "until_id": 0x123, "wait_timeout_s": 30}),
        &json!({"bus_id": "quiet", "until_id": 0x7e8, "wait_timeout_s": 5}),
    );
    assert_eq!(
        read["until_matched"], true,
        "the answer is still there: {read}"
    );
    let last = read["frames"].as_array().and_then(|f| f.last()).cloned();
    assert_eq!(last.map(|f| f["data_hex"].clone()), Some(json!("5001")));
}
