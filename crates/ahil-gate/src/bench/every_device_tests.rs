//! Every device a call touches is authorized before any contact (issue #24 item 2).
//!
//! For each tool and each device it touches (the [`TOUCHES`] table), with configuration versions 1
//! and 3: closing a grant the tool needs there refuses the call with `permission_denied` naming
//! that device, and the device is never opened. A COM port (a capture's, a session's, a supply's)
//! is a FIFO whose opening a watcher sees; a debugger is a fake that notes every invocation. Both
//! observations are shown to see the open when every grant is there, so neither passes vacuously.
//! A CAN bus names an interface that does not exist: there only the refusal before the claim (no
//! lease, no run) is observed.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::inotify;

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::noting_backend_tests::NotingBackend;
use crate::testkit::Fixture;

/// Which configured entry a row's grant lives on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum On {
    /// `debuggers.dut`: the probe, and the board `bench` powers.
    Dut,
    /// `com_ports.console`: the board's UART.
    Console,
    /// `power_supplies.bench`.
    Bench,
    /// `can_buses.bus`: a SocketCAN interface that does not exist.
    Bus,
    /// `artifacts.allow_upload`.
    Uploads,
}

impl On {
    fn entry(self) -> Option<&'static str> {
        match self {
            Self::Dut => Some("debuggers.dut"),
            Self::Console => Some("com_ports.console"),
            Self::Bench => Some("power_supplies.bench"),
            Self::Bus => Some("can_buses.bus"),
            Self::Uploads => None,
        }
    }
}

const V1: &[u8] = &[1];
const ANY: &[u8] = &[1, 3];
/// Power supplies exist from version 2 on.
const V3: &[u8] = &[3];

/// One device a tool touches and a grant it needs there: (tool, arguments, entry, flag, versions in
/// which the flag is needed). The lead replaces this with the per-tool declarations (issue #24
/// item 1); it is kept here, in one place, until then.
type Touch = (&'static str, &'static str, On, &'static str, &'static [u8]);

/// A row's arguments, which it names as JSON text.
fn parsed(args: &str) -> Value {
    serde_json::from_str(args).expect("a row's arguments are JSON")
}

// The rows' arguments. An uploaded artifact is named by an id (a digest and its extension) that no
// upload is behind.
const FLASH: &str = r#"{"image_path": "fw/fw.elf", "reset_after_flash": false}"#;
const FLASH_RESET: &str = r#"{"image_path": "fw/fw.elf", "reset_after_flash": true}"#;
const FLASH_CAPTURE: &str = r#"{"image_path": "fw/fw.elf", "reset_after_flash": true,
    "capture": {"port_id": "console", "until": "boot ok", "wait_timeout_s": 0.2}}"#;
const FLASH_RTT_CAPTURE: &str = r#"{"image_path": "fw/fw.elf", "reset_after_flash": true,
    "capture": {"rtt_channel": "terminal", "until": "rtt boot", "wait_timeout_s": 0.2}}"#;
const FLASH_UPLOAD: &str = r#"{"reset_after_flash": false,
    "artifact_id": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.elf"}"#;
const NOTHING: &str = "{}";
const RESET: &str = r#"{"mode": "run"}"#;
const START_RESET_HALT: &str = r#"{"image_path": "fw/fw.elf", "mode": "reset_halt"}"#;
const START_LOAD: &str = r#"{"image_path": "fw/fw.elf", "mode": "load"}"#;
const START_UPLOAD: &str = r#"{"mode": "attach",
    "artifact_id": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.elf"}"#;
const BREAKPOINT: &str = r#"{"location": {"function": "main"}}"#;
const SYMBOL: &str = r#"{"symbol": "counter"}"#;
const DUMP: &str = r#"{"symbol": "counter", "output_path": "out/counter.hex"}"#;
const SESSION: &str = r#"{"port_id": "console"}"#;
const WRITE: &str = r#"{"port_id": "console", "text": "x"}"#;
const RTT_READ: &str = r#"{"channel": "terminal"}"#;
const RTT_WRITE: &str = r#"{"channel": "terminal_in", "text": "x"}"#;
const CAN_READ: &str = r#"{"bus_id": "bus"}"#;
const CAN_SEND: &str = r#"{"bus_id": "bus", "frame_id": 291, "data_hex": "01"}"#;
const SET: &str = r#"{"supply_id": "bench", "channel": 1, "voltage_v": 3.3}"#;
const OUTPUT: &str = r#"{"supply_id": "bench", "channel": 1, "on": true}"#;
const CYCLE: &str = r#"{"supply_id": "bench", "channel": 1, "off_s": 0.5}"#;

#[rustfmt::skip]
const TOUCHES: &[Touch] = &[
    ("debugger_info", NOTHING, On::Dut, "allow_probe", V1),
    ("debugger_probes_list", NOTHING, On::Dut, "allow_probe", V1),
    ("probe_target", NOTHING, On::Dut, "allow_probe", V1),
    ("flash_firmware", FLASH, On::Dut, "allow_flash", ANY),
    ("flash_firmware", FLASH_RESET, On::Dut, "allow_flash", ANY),
    ("flash_firmware", FLASH_RESET, On::Dut, "allow_reset", ANY),
    ("flash_firmware", FLASH_CAPTURE, On::Dut, "allow_flash", ANY),
    ("flash_firmware", FLASH_CAPTURE, On::Dut, "allow_reset", ANY),
    ("flash_firmware", FLASH_CAPTURE, On::Console, "allow_read", V1),
    ("flash_firmware", FLASH_RTT_CAPTURE, On::Dut, "allow_flash", ANY),
    ("flash_firmware", FLASH_RTT_CAPTURE, On::Dut, "allow_reset", ANY),
    ("flash_firmware", FLASH_RTT_CAPTURE, On::Dut, "allow_probe", V1),
    ("flash_firmware", FLASH_UPLOAD, On::Dut, "allow_flash", ANY),
    ("flash_firmware", FLASH_UPLOAD, On::Uploads, "allow_upload", ANY),
    ("reset_target", RESET, On::Dut, "allow_reset", ANY),
    ("debug_start_session", START_RESET_HALT, On::Dut, "allow_probe", V1),
    ("debug_start_session", START_RESET_HALT, On::Dut, "allow_reset", ANY),
    ("debug_start_session", START_LOAD, On::Dut, "allow_probe", V1),
    ("debug_start_session", START_LOAD, On::Dut, "allow_reset", ANY),
    ("debug_start_session", START_LOAD, On::Dut, "allow_flash", ANY),
    ("debug_start_session", START_UPLOAD, On::Dut, "allow_probe", V1),
    ("debug_start_session", START_UPLOAD, On::Uploads, "allow_upload", ANY),
    ("debug_get_session_status", NOTHING, On::Dut, "allow_probe", V1),
    ("debug_set_breakpoint", BREAKPOINT, On::Dut, "allow_probe", V1),
    ("debug_list_breakpoints", NOTHING, On::Dut, "allow_probe", V1),
    ("debug_continue", NOTHING, On::Dut, "allow_probe", V1),
    ("debug_continue", NOTHING, On::Dut, "allow_debug_execution", ANY),
    ("debug_get_stop_reason", NOTHING, On::Dut, "allow_probe", V1),
    ("debug_symbol_info", SYMBOL, On::Dut, "allow_probe", V1),
    ("debug_symbol_value", SYMBOL, On::Dut, "allow_probe", V1),
    ("debug_dump_symbol_ihex", DUMP, On::Dut, "allow_probe", V1),
    // A session opens a write-only port (or bus) too: its row closes the declared alternative
    // (`allow_write`) with the read grant.
    ("com_session_start", SESSION, On::Console, "allow_read", V1),
    ("com_read", SESSION, On::Console, "allow_read", V1),
    ("com_write", WRITE, On::Console, "allow_write", ANY),
    ("can_session_start", CAN_READ, On::Bus, "allow_read", V1),
    ("can_read", CAN_READ, On::Bus, "allow_read", V1),
    ("can_send", CAN_SEND, On::Bus, "allow_write", ANY),
    ("rtt_session_start", NOTHING, On::Dut, "allow_probe", V1),
    ("rtt_read", RTT_READ, On::Dut, "allow_probe", V1),
    ("rtt_write", RTT_WRITE, On::Dut, "allow_probe", V1),
    ("rtt_write", RTT_WRITE, On::Dut, "allow_rtt_write", ANY),
    ("power_supply_set", SET, On::Bench, "allow_set", V3),
    ("power_supply_output", OUTPUT, On::Bench, "allow_output", V3),
    ("power_supply_output", OUTPUT, On::Dut, "allow_reset", V3),
    ("power_supply_cycle", CYCLE, On::Bench, "allow_output", V3),
    ("power_supply_cycle", CYCLE, On::Dut, "allow_reset", V3),
];

/// Every grant a row can close, as (entry, flag, versions in which the file may name it).
const GRANTS: &[(On, &str, &[u8])] = &[
    (On::Dut, "allow_probe", V1),
    (On::Dut, "allow_flash", ANY),
    (On::Dut, "allow_reset", ANY),
    (On::Dut, "allow_debug_execution", ANY),
    (On::Dut, "allow_rtt_write", ANY),
    (On::Console, "allow_read", V1),
    (On::Console, "allow_write", ANY),
    (On::Bus, "allow_read", V1),
    (On::Bus, "allow_write", ANY),
    (On::Bench, "allow_set", V3),
    (On::Bench, "allow_output", V3),
    (On::Uploads, "allow_upload", ANY),
];

/// The dotted key a refusal names for `flag` on `on`.
fn key(on: On, flag: &str) -> String {
    on.entry().map_or_else(
        || format!("artifacts.{flag}"),
        |entry| format!("{entry}.permissions.{flag}"),
    )
}

/// A FIFO standing in for a serial device, watched through inotify: the kernel queues the open
/// event before the opener's `open` returns, so an open a call made is seen once the call has
/// answered, however late the test runs. (A thread blocked opening the write end saw it only when
/// it next ran, which a loaded machine can put after the assertion.)
struct Watched {
    path: PathBuf,
    events: OwnedFd,
    seen: AtomicBool,
}

impl Watched {
    fn new(path: PathBuf) -> Self {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .expect("the FIFO is made");
        let events = inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC)
            .expect("an inotify instance");
        inotify::add_watch(&events, &path, inotify::WatchFlags::OPEN).expect("the FIFO is watched");
        Self {
            path,
            events,
            seen: AtomicBool::new(false),
        }
    }

    /// Whether anything has opened the FIFO since it was made.
    fn opened(&self) -> bool {
        let mut buffer = [0_u8; 1024];
        while rustix::io::read(&self.events, &mut buffer).is_ok_and(|n| n > 0) {
            self.seen.store(true, Ordering::SeqCst);
        }
        self.seen.load(Ordering::SeqCst)
    }
}

/// One bench: a fake openocd `dut` that notes its invocations, the `console` and `psu` FIFOs, and
/// a supply `bench` that powers `dut`.
struct World {
    // Dropped in this order: the watchers need their FIFOs, which go with the fixture.
    console: Watched,
    psu: Watched,
    debugger: NotingBackend,
    fixture: Fixture,
}

impl World {
    fn new(version: u8, closed: &[(On, &str)]) -> Self {
        let fixture = Fixture::new();
        let debugger = NotingBackend::new(&fixture, "openocd");
        let console = Watched::new(fixture.tools.join("console"));
        let psu = Watched::new(fixture.tools.join("psu"));
        let grants = |on: On| -> String {
            GRANTS
                .iter()
                .filter(|(o, _, versions)| *o == on && versions.contains(&version))
                .map(|(o, flag, _)| {
                    let open = !closed.contains(&(*o, *flag));
                    format!("      {flag}: {open}\n")
                })
                .collect::<Vec<_>>()
                .concat()
        };
        let uploads = !closed.contains(&(On::Uploads, "allow_upload"));
        let header = if version == 1 {
            String::new()
        } else {
            format!("version: {version}\n")
        };
        // The supply and its port: from version 2 on.
        let supply = if version == 1 {
            String::new()
        } else {
            format!(
                "  psu:\n    device: \"{psu}\"\n    resource_id: bench-psu\n    vid: 1046\n    pid: 20497\n\
                 power_supplies:\n  bench:\n    type: rs3005p\n    com_port: psu\n    powers: [dut]\n\
                 \x20   idn_serial: \"03682957\"\n    timeout_s: 0.3\n    voltage_limit_v: 5.5\n    current_limit_a: 1.5\n\
                 \x20   channels:\n      \"1\": {{voltage_limit_v: 5.0, current_limit_a: 1.0}}\n\
                 \x20   permissions:\n{bench}",
                psu = psu.path.display(),
                bench = grants(On::Bench),
            )
        };
        let text = format!(
            "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\n{header}\
             target:\n  name: board\n  controller: stm32f405\n\
             debuggers:\n  dut:\n    type: openocd\n    executable: \"{exe}\"\n    timeout_s: 5\n\
             \x20   rtt:\n      control_block: \"0x20000070\"\n      channels: [{{name: terminal, direction: up}}, \
             {{name: terminal_in, direction: down}}]\n\
             \x20   permissions:\n{dut}\
             com_ports:\n  console:\n    device: \"{console}\"\n    identity_source: device\n\
             \x20   permissions:\n{console_grants}{supply}\
             can_buses:\n  bus:\n    adapter: socketcan\n    channel: ahilnone0\n    permissions:\n{bus}\
             artifacts:\n  allowed_roots: [fw]\n  allow_upload: {uploads}\n",
            ws = fixture.workspace.display(),
            state = ahil_config::default_state_root(&fixture.env).display(),
            exe = debugger.exe.display(),
            dut = grants(On::Dut),
            console = console.path.display(),
            console_grants = grants(On::Console),
            bus = grants(On::Bus),
        );
        fixture.write_config(&text);
        let fw = fixture.workspace.join("fw");
        std::fs::create_dir_all(&fw).expect("fw dir");
        let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build");
        std::fs::copy(built.join("ahil-fw-v1.elf"), fw.join("fw.elf")).expect("firmware copies");
        Self {
            console,
            psu,
            debugger,
            fixture,
        }
    }

    /// Calls `tool` on a fresh gate; the fake's notes start empty (loading may ask its version).
    fn call(&self, tool: &str, args: &str) -> Value {
        let args = parsed(args);
        (self.debugger).call(&self.fixture, self.fixture.load(), tool, args)
    }

    fn invoked(&self) -> String {
        self.debugger.invoked()
    }
}

/// The grants `tool` with `args` needs in `version`, by the table.
fn needs(tool: &str, args: &str, version: u8) -> Vec<String> {
    TOUCHES
        .iter()
        .filter(|(t, a, _, _, versions)| *t == tool && *a == args && versions.contains(&version))
        .map(|(_, _, on, flag, _)| key(*on, flag))
        .collect()
}

/// The flag the declaration of `tool` accepts instead of `grant` (a session's `allow_write`).
fn alternative(tool: &str, grant: &str) -> Option<&'static str> {
    let id: crate::catalogue::ToolId = tool.parse().ok()?;
    id.gate()
        .needs
        .iter()
        .find(|need| need.grant == grant)
        .and_then(|need| need.or)
}

/// Calls row `row` in `version` with its grant and `others` closed and checks the refusal.
fn refused_before_contact(row: &Touch, version: u8, others: &[(On, &'static str)]) {
    let (tool, args, on, flag, _) = *row;
    let mut closed = vec![(on, flag)];
    closed.extend(alternative(tool, flag).map(|or| (on, or)));
    closed.extend_from_slice(others);
    let world = World::new(version, &closed);
    let doc = world.call(tool, args);
    let what = format!("{tool} {args} v{version} without {}", key(on, flag));
    assert_eq!(
        doc["error_type"],
        json!("permission_denied"),
        "{what}: {doc}"
    );
    let named = doc["permission"].as_str().unwrap_or_default().to_owned();
    let closed_keys: Vec<String> = closed.iter().map(|(o, f)| key(*o, f)).collect();
    assert!(
        closed_keys.contains(&named) && needs(tool, args, version).contains(&named),
        "{what}: the refusal names a needed, closed grant: {doc}"
    );
    let entry = named.split(".permissions.").next().unwrap_or_default();
    if named.contains(".permissions.") {
        assert_eq!(
            doc["device"],
            json!(entry),
            "{what}: names the device: {doc}"
        );
    }
    // Refused at authorization: before the claim, so no lease and no implicit run was taken.
    assert!(
        doc["lease_id"].is_null() && doc["run"].is_null(),
        "{what}: claimed first: {doc}"
    );
    world.debugger.assert_not_started(&doc, &what);
    assert!(!world.console.opened(), "{what}: the console was opened");
    assert!(!world.psu.opened(), "{what}: the supply's port was opened");
}

#[test]
fn every_tool_is_refused_before_contact_on_each_device_that_lacks_a_grant_it_needs() {
    for row in TOUCHES {
        for &version in row.4 {
            refused_before_contact(row, version, &[]);
        }
    }
}

#[test]
fn a_capture_on_a_port_without_read_is_refused_before_the_flash() {
    let row = TOUCHES
        .iter()
        .find(|(tool, args, on, _, _)| {
            *tool == "flash_firmware" && parsed(args).get("capture").is_some() && *on == On::Console
        })
        .expect("the table lists the capture's port");
    refused_before_contact(row, 1, &[]);
}

#[test]
fn a_capture_on_rtt_without_the_rtt_read_grant_is_refused_before_the_flash() {
    let row = TOUCHES
        .iter()
        .find(|(tool, args, _, flag, _)| {
            *tool == "flash_firmware"
                && parsed(args)["capture"].get("rtt_channel").is_some()
                && *flag == "allow_probe"
        })
        .expect("the table lists the capture's read of the debugger");
    refused_before_contact(row, 1, &[]);
}

#[test]
fn a_capture_on_rtt_of_a_debugger_without_an_rtt_section_is_refused_before_the_flash() {
    for version in [1, 3] {
        let world = World::new(version, &[]);
        let path = ahil_config::canonical_config_path(&world.fixture.workspace, &world.fixture.env);
        let text = std::fs::read_to_string(path).expect("the config");
        let start = text
            .find("    rtt:\n")
            .expect("the world has an rtt section");
        let end = text[start..]
            .find("    permissions:")
            .expect("grants follow")
            + start;
        world
            .fixture
            .write_config(&format!("{}{}", &text[..start], &text[end..]));
        let doc = world.call("flash_firmware", FLASH_RTT_CAPTURE);
        assert_eq!(
            doc["error_type"],
            json!("rtt_not_configured"),
            "v{version}: {doc}"
        );
        assert_eq!(doc["target_contacted"], json!(false), "v{version}: {doc}");
        assert!(world.invoked().is_empty(), "v{version}: the debugger ran");
        assert!(
            doc["lease_id"].is_null(),
            "v{version}: claimed first: {doc}"
        );
    }
}

#[test]
fn a_power_switch_is_refused_while_a_board_it_powers_may_not_be_reset() {
    for tool in ["power_supply_output", "power_supply_cycle"] {
        let row = TOUCHES
            .iter()
            .find(|(t, _, on, _, _)| *t == tool && *on == On::Dut)
            .expect("the table lists the powered board");
        refused_before_contact(row, 3, &[]);
    }
}

#[test]
fn with_every_grant_the_same_calls_reach_the_debugger_and_open_the_port() {
    // The observations above are only worth something if they see a call that does go ahead.
    let world = World::new(3, &[]);
    let doc = world.call("flash_firmware", FLASH);
    assert!(!world.invoked().is_empty(), "the fake notes a flash: {doc}");
    let world = World::new(1, &[]);
    world.call("com_session_start", SESSION);
    assert!(
        world.console.opened(),
        "the watcher sees a session open its port"
    );
    let world = World::new(1, &[]);
    let doc = world.call("flash_firmware", FLASH_CAPTURE);
    assert!(
        world.console.opened(),
        "the watcher sees a capture open its port: {doc}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Closing more grants than the one a row needs never lets the call through or past policy:
    /// it is still refused before contact, naming one of the grants it needs that is closed.
    #[test]
    fn closing_any_further_grants_still_refuses_before_contact(
        row in 0..TOUCHES.len(),
        v3 in any::<bool>(),
        extra in proptest::collection::vec(0..GRANTS.len(), 0..3),
    ) {
        let touch = &TOUCHES[row];
        let version = touch.4[usize::from(v3) % touch.4.len()];
        let others: Vec<(On, &'static str)> = extra
            .iter()
            .map(|i| GRANTS[*i])
            .filter(|(_, _, versions)| versions.contains(&version))
            .map(|(on, flag, _)| (on, flag))
            .collect();
        refused_before_contact(touch, version, &others);
    }
}

/// The declarations are the source: every device and grant a tool's declaration names has a row
/// above, and no row tests a need no declaration names. A tool that gains a device in its
/// declaration fails here until the property test refuses it there too.
#[test]
fn the_table_covers_exactly_the_needs_the_declarations_name() {
    use std::collections::BTreeSet;

    use crate::catalogue::{Touched, declarations};

    let touched = |tool: &str, on: On| match on {
        On::Dut if tool.starts_with("power_supply_") => Touched::PoweredBoard,
        On::Dut => Touched::Debugger,
        On::Console => Touched::ComPort,
        On::Bench => Touched::PowerSupply,
        On::Bus => Touched::CanBus,
        On::Uploads => Touched::Uploads,
    };
    let tested: BTreeSet<(&str, Touched, &str)> = TOUCHES
        .iter()
        .map(|(tool, _, on, grant, _)| (*tool, touched(tool, *on), *grant))
        .collect();
    let declared: BTreeSet<(&str, Touched, &str)> = declarations()
        .flat_map(|d| d.gate.needs.iter().map(|n| (d.name, n.on, n.grant)))
        .collect();
    assert_eq!(
        declared, tested,
        "the declarations' needs and the property test's rows differ"
    );
}

/// A capture on a supply's serial link would read the supply's answers while the flash runs: it is
/// refused before the flash, and the link is never opened (it used to be opened and read).
#[test]
fn a_capture_on_a_supply_port_is_refused_before_the_flash() {
    let world = World::new(3, &[]);
    let capture = FLASH_CAPTURE.replace("\"console\"", "\"psu\"");
    let doc = world.call("flash_firmware", &capture);
    assert_eq!(
        doc["error_type"],
        json!("com_port_reserved_for_power_supply"),
        "{doc}"
    );
    world
        .debugger
        .assert_not_started(&doc, "a capture on the supply's port");
    assert!(!world.psu.opened(), "the supply's port was opened: {doc}");
}
