//! The shape of a configuration document (versions 1 to 3), as one [`Spec`] tree.
//!
//! Key names, types, enumerations, patterns, bounds and defaults are the compatibility
//! surface shared with the reference implementation; the descriptions are ours.

use std::sync::LazyLock;

use serde_json::{Value, json};

use crate::node::{Node, Path};
use crate::patterns::Pattern;
use crate::spec::{Problem, Spec, Ty, limit_json, to_json_schema};

static CONFIG_SPEC: LazyLock<Spec> = LazyLock::new(build);

pub(crate) fn config_spec() -> &'static Spec {
    &CONFIG_SPEC
}

/// Our JSON Schema of the configuration file.
pub fn config_json_schema() -> Value {
    let mut schema = to_json_schema(config_spec());
    if let Value::Object(m) = &mut schema {
        let mut head = serde_json::Map::new();
        head.insert(
            "$schema".into(),
            json!("https://json-schema.org/draft/2020-12/schema"),
        );
        head.insert(
            "$id".into(),
            json!("https://agentic-hil.local/schemas/config.schema.json"),
        );
        head.insert("title".into(), json!("agentic-hil configuration"));
        head.extend(std::mem::take(m));
        *m = head;
    }
    schema
}

fn boolean(default: bool) -> Spec {
    Spec::of(&[Ty::Bool]).default(json!(default))
}

fn string(default: &str) -> Spec {
    Spec::of(&[Ty::Str]).default(json!(default))
}

fn opt_string() -> Spec {
    Spec::of(&[Ty::Str, Ty::Null]).default(Value::Null)
}

fn opt_id() -> Spec {
    opt_string().pattern(Pattern::Id)
}

fn int_min(min: f64, default: i64) -> Spec {
    Spec::of(&[Ty::Int]).min(min).default(json!(default))
}

fn choice(values: &[&str], default: Option<&str>) -> Spec {
    let vals: Vec<Value> = values.iter().map(|v| json!(v)).collect();
    let s = Spec::of(&[Ty::Str]).choices(&vals);
    match default {
        Some(d) => s.default(json!(d)),
        None => s,
    }
}

/// A device entry's grants: first its read flag, which only version 1 has (later versions refuse
/// it by name), then the others; `what` describes the object.
fn device_grants(
    (read_key, read_note): (&'static str, &'static str),
    grants: Vec<(&'static str, Spec)>,
    what: &'static str,
) -> Spec {
    let read = boolean(false).deprecated().describe(read_note);
    Spec::object([(read_key, read)].into_iter().chain(grants).collect())
        .default(json!({}))
        .describe(what)
}

fn debugger_permissions() -> Spec {
    device_grants(
        ("allow_probe", "Version 1 only: reading the probe."),
        vec![
            ("allow_flash", boolean(false)),
            ("allow_reset", boolean(false)),
            ("allow_debug_execution", boolean(false)),
            ("allow_raw_debugger_commands", boolean(false)),
            ("allow_mass_erase", boolean(false)),
            (
                "allow_rtt_write",
                boolean(false).describe("Writing to RTT down channels (ours alone)."),
            ),
        ],
        "What this probe may do beyond reading it; an absent flag is false.",
    )
}

fn io_permissions() -> Spec {
    device_grants(
        ("allow_read", "Version 1 only: reading the device."),
        vec![("allow_write", boolean(false))],
        "What this port or bus may do beyond reading it; an absent flag is false.",
    )
}

/// Entries by name; none when the key is absent.
fn named(entry: Spec) -> Spec {
    Spec::map_of(Pattern::Name, entry).default(json!({}))
}

fn usb_id() -> Spec {
    Spec::of(&[Ty::Int, Ty::Str, Ty::Null])
        .min(0.0)
        .max(65535.0)
        .pattern(Pattern::UsbHex)
        .usb_id()
        .default(Value::Null)
}

fn debugger_entry() -> Spec {
    Spec::object(vec![
        (
            "type",
            choice(
                &["openocd", "stlink", "pyocd", "esptool", "qemu", "probe-rs"],
                Some("openocd"),
            ),
        ),
        ("executable", opt_string()),
        ("gdb_server_executable", opt_string()),
        ("probe_id", opt_id()),
        (
            "discovered_by",
            choice(&["stm32cubeprogrammer_cli", "usb_serial_inventory"], None),
        ),
        ("probe_inventory", choice(&["complete", "incomplete"], None)),
        ("probe_inventory_note", Spec::of(&[Ty::Str])),
        ("target_type", opt_string().pattern(Pattern::Name)),
        ("interface", choice(&["SWD", "JTAG"], Some("SWD"))),
        (
            "connect_mode",
            choice(&["hotplug", "under_reset"], Some("hotplug")),
        ),
        ("interface_cfg", string("interface/stlink.cfg")),
        ("target_cfg", string("target/stm32f4x.cfg")),
        ("flash_address", opt_string().pattern(Pattern::FlashAddress)),
        ("resource_id", opt_id()),
        ("com_port", Spec::of(&[Ty::Str]).pattern(Pattern::Name)),
        (
            "timeout_s",
            Spec::of(&[Ty::Num]).above(0.0).default(json!(60.0)),
        ),
        ("permissions", debugger_permissions()),
        (
            "target",
            Spec::object(vec![
                ("name", Spec::of(&[Ty::Str])),
                ("controller", Spec::of(&[Ty::Str])),
            ])
            .describe("Overrides the project target for this probe."),
        ),
        (
            "machine",
            Spec::of(&[Ty::Str])
                .pattern(Pattern::Name)
                .describe("type qemu only: the emulated machine (netduinoplus2 when absent)."),
        ),
        (
            "board_dir",
            Spec::of(&[Ty::Str]).describe(
                "type qemu only: the board's state directory, absolute and outside the workspace \
                 (state_root/sim/<entry> when absent).",
            ),
        ),
        ("rtt", rtt_section()),
    ])
}

/// SEGGER RTT on the target (ours alone): where its control block is, the channels an agent may
/// name, and the caps.
fn rtt_section() -> Spec {
    let address = || Spec::of(&[Ty::Str]).pattern(Pattern::FlashAddress);
    let channel = Spec::object(vec![
        ("name", Spec::of(&[Ty::Str]).pattern(Pattern::Name)),
        ("direction", choice(&["up", "down"], None)),
        ("index", int_min(0.0, 0).max(15.0)),
        (
            "format",
            choice(&["text", "defmt"], Some("text")).describe(
                "defmt: frames decoded with the flashed ELF's `.defmt` table (up channels).",
            ),
        ),
    ]);
    Spec::object(vec![
        (
            "control_block",
            address().describe("The control block's address."),
        ),
        (
            "scan",
            Spec::object(vec![
                ("start", address()),
                ("size", Spec::of(&[Ty::Int]).min(16.0).max(16_777_216.0)),
            ])
            .describe("A RAM range searched for the block's \"SEGGER RTT\" id."),
        ),
        (
            "from_elf",
            boolean(false).describe("Use `_SEGGER_RTT` of the ELF last flashed."),
        ),
        (
            "channels",
            Spec::list_of(channel).describe("The channels an agent may name."),
        ),
        ("max_buffer_bytes", int_min(1.0, 65_536)),
        ("max_write_bytes", int_min(1.0, 256)),
        ("poll_interval_ms", int_min(1.0, 10).max(1000.0)),
    ])
    .describe("SEGGER RTT through the probe; a file using it is not one the reference loads.")
}

fn com_port_entry() -> Spec {
    let sources: Vec<Value> = [
        "resource_id",
        "serial_number",
        "vid_pid",
        "vid",
        "pid",
        "device",
    ]
    .iter()
    .map(|v| json!(v))
    .chain([Value::Null])
    .collect();
    Spec::object(vec![
        ("device", Spec::of(&[Ty::Str, Ty::Null])),
        ("baudrate", int_min(1.0, 115_200)),
        ("serial_number", opt_id()),
        ("vid", usb_id()),
        ("pid", usb_id()),
        (
            "timeout_s",
            Spec::of(&[Ty::Num]).min(0.0).default(json!(0.1)),
        ),
        (
            "write_timeout_s",
            Spec::of(&[Ty::Num]).min(0.0).default(json!(1.0)),
        ),
        ("encoding", string("utf-8")),
        ("assert_dtr", boolean(true)),
        ("assert_rts", boolean(true)),
        ("max_buffer_bytes", int_min(1.0, 65_536)),
        ("max_write_bytes", int_min(1.0, 4_096)),
        ("resource_id", opt_id()),
        (
            "identity_source",
            Spec::of(&[Ty::Str, Ty::Null])
                .choices(&sources)
                .default(Value::Null),
        ),
        ("permissions", io_permissions()),
    ])
}

fn share_entry() -> Spec {
    let filter = Spec::object(vec![
        ("id", int_min(0.0, 0)),
        ("mask", int_min(0.0, 0x7FF)),
        ("extended", boolean(false)),
    ]);
    Spec::object(vec![
        (
            "filter",
            Spec::list_of(filter).describe("Identifier terms; an empty list accepts all."),
        ),
        ("max_frames", int_min(1.0, 1024)),
        ("requires_listen_only", boolean(false)),
        ("permissions", io_permissions()),
    ])
}

/// Classic CAN carries at most 8 data bytes; only an FD bus may go to 64.
fn can_frame_size(node: &Node, at: &Path, out: &mut Vec<Problem>) {
    let fd = matches!(node.get("fd"), Some(Node::Bool(true)));
    let cap: i128 = if fd { 64 } else { 8 };
    if let Some(Node::Int(n)) = node.get("max_frame_data_bytes") {
        // Above 64 the declared maximum has already reported it.
        if *n > cap && *n <= 64 {
            out.push(Problem::Bound {
                at: at.key("max_frame_data_bytes"),
                validator: "maximum",
                #[allow(clippy::cast_precision_loss)]
                limit: limit_json(cap as f64),
                value: json!(n.to_string().parse::<i64>().unwrap_or_default()),
            });
        }
    }
}

fn can_bus_entry() -> Spec {
    Spec::object(vec![
        (
            "adapter",
            choice(&["peak", "socketcan", "process"], Some("peak")),
        ),
        ("channel", Spec::of(&[Ty::Str])),
        ("bitrate", int_min(1.0, 500_000)),
        ("fd", boolean(false)),
        (
            "data_bitrate",
            Spec::of(&[Ty::Int, Ty::Null]).min(1.0).default(Value::Null),
        ),
        ("pcanbasic_dll", opt_string()),
        ("executable", opt_string()),
        (
            "timeout_s",
            Spec::of(&[Ty::Num]).min(0.0).default(json!(10.0)),
        ),
        ("poll_interval_ms", int_min(1.0, 10)),
        ("receive_own_messages", boolean(false)),
        ("listen_only", boolean(false)),
        ("max_buffer_frames", int_min(1.0, 1024)),
        (
            "max_frame_data_bytes",
            Spec::of(&[Ty::Int])
                .min(0.0)
                .max(64.0)
                .describe("Defaults to 8, or 64 on an FD bus."),
        ),
        ("resource_id", opt_id()),
        ("permissions", io_permissions()),
        (
            "listen_only_enforcement",
            choice(&["controller", "service"], Some("controller")),
        ),
        (
            "shares",
            named(share_entry())
                .describe("Named participants of a brokered bus; absent means one owner."),
        ),
    ])
    .required(&["channel"])
    .post(can_frame_size)
}

fn power_supply_entry() -> Spec {
    let limit = || Spec::of(&[Ty::Num]).above(0.0);
    let channel = Spec::object(vec![
        ("voltage_limit_v", limit()),
        ("current_limit_a", limit()),
    ]);
    Spec::object(vec![
        (
            "type",
            Spec::of(&[Ty::Str]).describe("Supply model, e.g. rs3005p."),
        ),
        (
            "com_port",
            Spec::of(&[Ty::Str]).describe("The com_ports entry reserved for this supply."),
        ),
        (
            "powers",
            Spec::list_of(Spec::of(&[Ty::Str])).describe("Debuggers whose boards it powers."),
        ),
        ("voltage_limit_v", limit()),
        ("current_limit_a", limit()),
        (
            "channels",
            Spec::map_of(Pattern::Channel, channel).default(json!({})),
        ),
        ("idn_serial", Spec::of(&[Ty::Str]).pattern(Pattern::Id)),
        (
            "timeout_s",
            Spec::of(&[Ty::Num]).above(0.0).default(json!(1.0)),
        ),
        (
            "permissions",
            Spec::object(vec![
                ("allow_set", boolean(false)),
                ("allow_output", boolean(false)),
            ])
            .default(json!({})),
        ),
    ])
    .required(&["type", "com_port", "powers"])
}

fn labgrid_section() -> Spec {
    let places = || named(Spec::of(&[Ty::Str]).pattern(Pattern::Name));
    Spec::object(vec![
        (
            "coordinator",
            Spec::of(&[Ty::Str]).describe("host:port of labgrid's coordinator: loopback or a host name."),
        ),
        (
            "user",
            opt_string().describe("The labgrid user this gate acts as, host/user; <host>/agentic-hil unless set."),
        ),
        (
            "places",
            Spec::object(vec![
                ("debuggers", places()),
                ("com_ports", places()),
                ("can_buses", places()),
                ("power_supplies", places()),
            ])
            .default(json!({}))
            .describe("The labgrid place each entry belongs to, by section and entry name."),
        ),
    ])
    .required(&["coordinator"])
    .describe("labgrid places held through the coordinator; a file using it is not one the reference loads.")
}

fn holds_section() -> Spec {
    #[allow(clippy::cast_precision_loss)]
    let most = crate::holds::MAX_HOLD_S as f64;
    let limit = |what: &'static str| {
        Spec::of(&[Ty::Int, Ty::Null])
            .min(1.0)
            .max(most)
            .default(Value::Null)
            .describe(what)
    };
    Spec::object(vec![
        (
            "max_run_s",
            limit("Seconds a bench_run_start run may stay open before the gate stops it; unlimited when absent."),
        ),
        (
            "max_session_s",
            limit("Seconds a COM, CAN, debug or RTT session may stay open before the gate stops it; unlimited when absent."),
        ),
    ])
    .default(json!({}))
    .describe("Holds that end by themselves, set by the operator only; a file using it is not one the reference loads.")
}

fn build() -> Spec {
    let permissions = Spec::object(vec![
        ("allow_config_write", boolean(false)),
        ("allow_config_description_write", boolean(false)),
        ("allow_config_permissions_write", boolean(false)),
        ("allow_recover", boolean(false)),
        ("allow_upgrade", boolean(false)),
    ])
    .default(json!({}))
    .describe("Grants about the project itself rather than a device.");
    let provenance = Spec::object(vec![
        ("created_by", choice(&["agent", "human"], None)),
        ("created_via", Spec::of(&[Ty::Str])),
        ("created_at", Spec::of(&[Ty::Str])),
        ("agentic_hil_version", Spec::of(&[Ty::Str])),
        ("last_modified_by", choice(&["agent", "human", "cli"], None)),
        ("last_modified_via", Spec::of(&[Ty::Str])),
        ("last_modified_at", Spec::of(&[Ty::Str])),
        ("last_modified_keys", Spec::list_of(Spec::of(&[Ty::Str]))),
        ("modification_count", Spec::of(&[Ty::Int]).min(0.0)),
    ])
    .describe("Who wrote the file; informational, grants nothing.");
    let target = Spec::object(vec![
        ("name", string("unknown-target")),
        ("controller", string("unknown-controller")),
    ]);
    let debug = Spec::object(vec![
        ("gdb_executable", opt_string()),
        (
            "allowed_symbols",
            Spec::list_of(Spec::of(&[Ty::Str]).pattern(Pattern::Symbol)).default(json!([])),
        ),
        ("allow_all_symbols", boolean(false)),
        ("max_dump_size_bytes", int_min(1.0, 1_048_576)),
    ])
    .default(json!({}));
    let artifacts = Spec::object(vec![
        (
            "allowed_roots",
            Spec::list_of(Spec::of(&[Ty::Str]))
                .min_items(1)
                .default(json!(["build"])),
        ),
        ("upload_directory", string(".agentic-hil/artifacts")),
        (
            "allowed_extensions",
            Spec::list_of(Spec::of(&[Ty::Str])).default(json!([".elf", ".hex", ".bin"])),
        ),
        ("max_upload_size_mb", int_min(1.0, 64)),
        ("allow_upload", boolean(false)),
    ]);
    let validation = Spec::object(vec![
        ("require_existing_file", boolean(true)),
        ("require_allowed_root", boolean(true)),
        ("require_allowed_extension", boolean(true)),
        ("compute_sha256", boolean(true)),
        ("inspect_known_formats", boolean(true)),
    ]);
    let recovery = Spec::object(vec![
        (
            "auto_recover",
            choice(&["off", "readonly", "reset_halt"], Some("reset_halt")),
        ),
        (
            "max_attempts",
            Spec::of(&[Ty::Int]).min(1.0).max(10.0).default(json!(3)),
        ),
    ])
    .describe("How far the owning process may clear its own incidents.");
    Spec::object(vec![
        (
            "version",
            Spec::of(&[Ty::Int])
                .choices(&[json!(1), json!(2), json!(3)])
                .default(json!(1))
                .describe(
                    "Rule set: 1 gates reads, 2 drops read grants, 3 also requires COM identity.",
                ),
        ),
        (
            "workspace_root",
            Spec::of(&[Ty::Str])
                .min_length(1)
                .describe("Absolute path of the project this file authorizes."),
        ),
        (
            "state_root",
            Spec::of(&[Ty::Str])
                .min_length(1)
                .describe("Absolute, writable, outside the workspace."),
        ),
        ("permissions", permissions),
        ("provenance", provenance),
        ("target", target),
        (
            "debuggers",
            named(debugger_entry()).describe("Debug probes by name."),
        ),
        ("debug", debug),
        ("artifacts", artifacts),
        (
            "com_ports",
            named(com_port_entry()).describe("Serial ports by name."),
        ),
        (
            "can_buses",
            named(can_bus_entry()).describe("CAN buses by name."),
        ),
        (
            "power_supplies",
            named(power_supply_entry())
                .describe("Bench power supplies, version 2 and later; written only by a person."),
        ),
        ("validation", validation),
        (
            "reports",
            Spec::object(vec![("directory", string(".agentic-hil/reports"))]),
        ),
        (
            "logs",
            Spec::object(vec![("directory", string(".agentic-hil/logs"))]),
        ),
        ("recovery", recovery),
        ("labgrid", labgrid_section()),
        ("holds", holds_section()),
    ])
    .required(&["workspace_root", "state_root"])
    .describe("Authoritative agentic-hil project configuration.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_schema_names_the_draft_and_requires_both_roots() {
        let s = config_json_schema();
        assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
        assert_eq!(s["required"], json!(["workspace_root", "state_root"]));
        assert_eq!(s["additionalProperties"], json!(false));
        assert_eq!(
            s["properties"]["debuggers"]["propertyNames"]["pattern"],
            "^[A-Za-z0-9_.-]+$"
        );
    }
}
