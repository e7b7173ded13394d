//! The differences the suite accepts, each with its reason; docs/COMPATIBILITY.md explains every
//! reason, and the suite fails on a difference missing here or listed here and no longer seen.

/// Why the two answers differ. Each id is an anchor in docs/COMPATIBILITY.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// A refusal decided before any device was contacted is `not_started` and `retry_safe`.
    RetrySafe,
    /// A frame the adapter could never send is refused before it reaches the adapter.
    Frames,
    /// No absolute path of the machine reaches a client.
    NoPaths,
    /// `check-plan --strict` names a plan's unconfigured device as `unknown_device`.
    PlanDevice,
    /// A key that names a program is the operator's: never writable over MCP.
    Programs,
    /// A configuration key or value only this implementation has (`type: probe-rs`, …).
    OursAlone,
    /// On a shared bus a call may leave out the participant while this server is exactly one.
    LoneParticipant,
    /// A capture port a COM session holds is `com_port_busy`, as every other holder of the port is.
    HeldCapturePort,
    /// A call lacking a grant is refused by name before its session, artifact, output path or
    /// discovery is looked at.
    GrantsFirst,
    /// Switching a supply needs the reset grant of every board it powers.
    PoweredBoard,
    /// Every number a tool takes has a published maximum, refused past it.
    Maxima,
    /// A plan refused at preflight answers its cause's `error_type` and the key the plan wrote.
    PreflightCause,
    /// A version 1 file's read grants (`allow_probe`, `allow_read`) narrow over MCP like any other.
    ReadGrantsNarrow,
    /// A bug of ours, a TODO(#25): fix ours, then delete its row.
    KnownBug,
}

impl Reason {
    pub fn id(self) -> &'static str {
        match self {
            Self::RetrySafe => "refused-before-contact-is-retry-safe",
            Self::Frames => "frames-refused-before-the-adapter",
            Self::NoPaths => "no-absolute-paths",
            Self::PlanDevice => "unconfigured-plan-device-is-unknown-device",
            Self::Programs => "program-keys-are-the-operators",
            Self::OursAlone => "ours-alone",
            Self::LoneParticipant => "a-lone-participant-may-go-unnamed",
            Self::HeldCapturePort => "a-held-capture-port-is-busy",
            Self::GrantsFirst => "a-missing-grant-is-named-first",
            Self::PoweredBoard => "a-powered-board-needs-its-reset-grant",
            Self::Maxima => "every-number-has-a-maximum",
            Self::PreflightCause => "a-plan-refused-at-preflight-names-its-cause",
            Self::ReadGrantsNarrow => "version-1-read-grants-narrow-too",
            Self::KnownBug => "known-bug",
        }
    }
}

/// One listed difference: (case, field, our value, the reference's value, reason); values are JSON.
pub type Difference = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Reason,
);

use Reason::{
    Frames, GrantsFirst, HeldCapturePort, LoneParticipant, Maxima, NoPaths, OursAlone, PlanDevice,
    PoweredBoard, PreflightCause, Programs, ReadGrantsNarrow, RetrySafe,
};

#[rustfmt::skip]
pub const DIFFERENCES: &[Difference] = &[
    ("serial/com_session_stop", "config_in_force.path#leaks_root", "false", "true", NoPaths),
    ("serial/com_session_start unknown port", "side_effect_status", r#""not_started""#, r#""unknown""#, RetrySafe),
    ("serial/com_session_start unknown port", "retry_safe", "true", "false", RetrySafe),
    ("run/bench_run_start undeclared", "retry_safe", "true", "false", RetrySafe),
    ("run/bench_run_start debugger", "declared_devices#leaks_root", "false", "true", NoPaths),
    ("can/can_send unknown bus", "side_effect_status", r#""not_started""#, r#""unknown""#, RetrySafe),
    ("can/can_send unknown bus", "retry_safe", "true", "false", RetrySafe),
    ("can/can_send nine bytes", "side_effect_status", r#""not_started""#, r#""unknown""#, Frames),
    ("can/can_send nine bytes", "retry_safe", "true", "false", Frames),
    ("can/can_read after the refused frame", "isError", "false", "true", Frames),
    ("can/can_read after the refused frame", "error_type", "null", r#""session_not_active""#, Frames),
    ("psu/power_supply_set above the channel voltage limit", "retry_safe", "true", "false", RetrySafe),
    ("psu/power_supply_set above the channel current limit", "retry_safe", "true", "false", RetrySafe),
    ("psu/power_supply_status unknown supply", "retry_safe", "true", "false", RetrySafe),
    ("config/project_config_describe", "config_status.path#leaks_root", "false", "true", NoPaths),
    ("unbound/check-plan --strict unconfigured device", "error_type", r#""unknown_device""#, "null", PlanDevice),
    ("config/project_config_describe", "writable_keys#len", "17", "22", Programs),
    ("config/project_config_describe", "locked_keys#len", "5", "0", Programs),
    ("config/project_config_describe", "locked_keys@debuggers.dut.executable@locked_by", r#""operator""#, "null", Programs),
    ("config/project_config_set a program", "isError", "true", "false", Programs),
    ("config/project_config_set a program", "error_type", r#""operator_only_key""#, "null", Programs),
    ("ours-alone/doctor with a probe-rs debugger", "isError", "false", "true", OursAlone),
    ("ours-alone/doctor with a probe-rs debugger", "error_type", "null", r#""config_invalid""#, OursAlone),
    ("shared/can_read the default participant", "isError", "false", "true", LoneParticipant),
    ("shared/can_read the default participant", "error_type", "null", r#""can_participant_required""#, LoneParticipant),
    ("capture/flash_firmware capture on a port a session holds", "error_type", r#""com_port_busy""#, r#""invalid_argument""#, HeldCapturePort),
    // The permission matrix (permissions.rs).
    ("perm/v1/allow_probe/debug_start_session attach upload", "error_type", r#""permission_denied""#, r#""artifact_not_found""#, GrantsFirst),
    ("perm/v1/allow_probe/debug_start_session attach upload", "permission", r#""debuggers.dut.permissions.allow_probe""#, "null", GrantsFirst),
    ("perm/v1/allow_probe/debug_get_session_status", "isError", "true", "false", GrantsFirst),
    ("perm/v1/allow_probe/debug_get_session_status", "error_type", r#""permission_denied""#, "null", GrantsFirst),
    ("perm/v1/allow_probe/debug_get_session_status", "permission", r#""debuggers.dut.permissions.allow_probe""#, "null", GrantsFirst),
    ("perm/v1/allow_probe/debug_set_breakpoint", "error_type", r#""permission_denied""#, r#""session_not_active""#, GrantsFirst),
    ("perm/v1/allow_probe/debug_set_breakpoint", "permission", r#""debuggers.dut.permissions.allow_probe""#, "null", GrantsFirst),
    ("perm/v1/allow_probe/debug_list_breakpoints", "isError", "true", "false", GrantsFirst),
    ("perm/v1/allow_probe/debug_list_breakpoints", "error_type", r#""permission_denied""#, "null", GrantsFirst),
    ("perm/v1/allow_probe/debug_list_breakpoints", "permission", r#""debuggers.dut.permissions.allow_probe""#, "null", GrantsFirst),
    ("perm/v1/allow_probe/debug_continue", "error_type", r#""permission_denied""#, r#""session_not_active""#, GrantsFirst),
    ("perm/v1/allow_probe/debug_continue", "permission", r#""debuggers.dut.permissions.allow_probe""#, "null", GrantsFirst),
    ("perm/v1/allow_probe/debug_get_stop_reason", "error_type", r#""permission_denied""#, r#""session_not_active""#, GrantsFirst),
    ("perm/v1/allow_probe/debug_get_stop_reason", "permission", r#""debuggers.dut.permissions.allow_probe""#, "null", GrantsFirst),
    ("perm/v1/allow_probe/debug_symbol_info", "error_type", r#""permission_denied""#, r#""session_not_active""#, GrantsFirst),
    ("perm/v1/allow_probe/debug_symbol_info", "permission", r#""debuggers.dut.permissions.allow_probe""#, "null", GrantsFirst),
    ("perm/v1/allow_probe/debug_symbol_value", "error_type", r#""permission_denied""#, r#""session_not_active""#, GrantsFirst),
    ("perm/v1/allow_probe/debug_symbol_value", "permission", r#""debuggers.dut.permissions.allow_probe""#, "null", GrantsFirst),
    ("perm/v1/allow_probe/debug_dump_symbol_ihex", "error_type", r#""permission_denied""#, r#""output_validation_failed""#, GrantsFirst),
    ("perm/v1/allow_probe/debug_dump_symbol_ihex", "permission", r#""debuggers.dut.permissions.allow_probe""#, "null", GrantsFirst),
    ("perm/v1/allow_reset/project_config_adopt_hardware", "error_type", r#""permission_denied""#, r#""probe_inventory_incomplete""#, GrantsFirst),
    ("perm/v1/allow_reset/project_config_adopt_hardware", "permission", r#""permissions.allow_config_description_write""#, "null", GrantsFirst),
    ("perm/v1/allow_debug_execution/debug_continue", "error_type", r#""permission_denied""#, r#""session_not_active""#, GrantsFirst),
    ("perm/v1/allow_debug_execution/debug_continue", "permission", r#""debuggers.dut.permissions.allow_debug_execution""#, "null", GrantsFirst),
    ("perm/v3/allow_reset/power_supply_output open", "error_type", r#""permission_denied""#, r#""com_port_identity_unverified""#, PoweredBoard),
    ("perm/v3/allow_reset/power_supply_output open", "permission", r#""debuggers.dut.permissions.allow_reset""#, "null", PoweredBoard),
    ("perm/v3/allow_reset/power_supply_cycle open", "error_type", r#""permission_denied""#, r#""com_port_identity_unverified""#, PoweredBoard),
    ("perm/v3/allow_reset/power_supply_cycle open", "permission", r#""debuggers.dut.permissions.allow_reset""#, "null", PoweredBoard),
    ("perm/v3/allow_reset/project_config_adopt_hardware", "error_type", r#""permission_denied""#, r#""probe_inventory_incomplete""#, GrantsFirst),
    ("perm/v3/allow_reset/project_config_adopt_hardware", "permission", r#""permissions.allow_config_description_write""#, "null", GrantsFirst),
    ("perm/v3/allow_debug_execution/debug_continue", "error_type", r#""permission_denied""#, r#""session_not_active""#, GrantsFirst),
    ("perm/v3/allow_debug_execution/debug_continue", "permission", r#""debuggers.dut.permissions.allow_debug_execution""#, "null", GrantsFirst),
    // Narrowing each grant over MCP (narrowing.rs).
    ("narrow/v1/narrowing debuggers.dut.permissions.allow_probe", "isError", "false", "true", ReadGrantsNarrow),
    ("narrow/v1/narrowing debuggers.dut.permissions.allow_probe", "error_type", "null", r#""invalid_argument""#, ReadGrantsNarrow),
    ("narrow/v1/narrowing debuggers.dut.permissions.allow_probe", "field", "null", r#""changes.0.key""#, ReadGrantsNarrow),
    ("narrow/v1/narrowing debuggers.dut.permissions.allow_probe", "reload_required", "true", "null", ReadGrantsNarrow),
    ("narrow/v1/narrowing com_ports.nowrite.permissions.allow_read", "isError", "false", "true", ReadGrantsNarrow),
    ("narrow/v1/narrowing com_ports.nowrite.permissions.allow_read", "error_type", "null", r#""invalid_argument""#, ReadGrantsNarrow),
    ("narrow/v1/narrowing com_ports.nowrite.permissions.allow_read", "field", "null", r#""changes.0.key""#, ReadGrantsNarrow),
    ("narrow/v1/narrowing com_ports.nowrite.permissions.allow_read", "reload_required", "true", "null", ReadGrantsNarrow),
    ("narrow/v1/narrowing can_buses.nowrite.permissions.allow_read", "isError", "false", "true", ReadGrantsNarrow),
    ("narrow/v1/narrowing can_buses.nowrite.permissions.allow_read", "error_type", "null", r#""invalid_argument""#, ReadGrantsNarrow),
    ("narrow/v1/narrowing can_buses.nowrite.permissions.allow_read", "field", "null", r#""changes.0.key""#, ReadGrantsNarrow),
    ("narrow/v1/narrowing can_buses.nowrite.permissions.allow_read", "reload_required", "true", "null", ReadGrantsNarrow),
    // Argument validation (arguments.rs): the maxima the reference does not publish.
    ("args/flash_firmware capture of the wrong type", "validator", r#""oneOf""#, r#""type""#, OursAlone),
    ("args/debug_start_session timeout_s above its maximum", "error_type", r#""invalid_argument""#, r#""artifact_not_found""#, Maxima),
    ("args/debug_start_session timeout_s above its maximum", "field", r#""timeout_s""#, "null", Maxima),
    ("args/debug_start_session timeout_s above its maximum", "validator", r#""maximum""#, "null", Maxima),
    ("args/debug_stop_session timeout_s above its maximum", "isError", "true", "false", Maxima),
    ("args/debug_stop_session timeout_s above its maximum", "error_type", r#""invalid_argument""#, "null", Maxima),
    ("args/debug_stop_session timeout_s above its maximum", "field", r#""timeout_s""#, "null", Maxima),
    ("args/debug_stop_session timeout_s above its maximum", "validator", r#""maximum""#, "null", Maxima),
    ("args/debug_continue timeout_s above its maximum", "error_type", r#""invalid_argument""#, r#""session_not_active""#, Maxima),
    ("args/debug_continue timeout_s above its maximum", "field", r#""timeout_s""#, "null", Maxima),
    ("args/debug_continue timeout_s above its maximum", "validator", r#""maximum""#, "null", Maxima),
    ("args/debug_halt timeout_s above its maximum", "error_type", r#""invalid_argument""#, r#""session_not_active""#, Maxima),
    ("args/debug_halt timeout_s above its maximum", "field", r#""timeout_s""#, "null", Maxima),
    ("args/debug_halt timeout_s above its maximum", "validator", r#""maximum""#, "null", Maxima),
    ("args/com_read max_bytes above its maximum", "error_type", r#""invalid_argument""#, r#""com_port_not_configured""#, Maxima),
    ("args/com_read max_bytes above its maximum", "field", r#""max_bytes""#, "null", Maxima),
    ("args/com_read max_bytes above its maximum", "validator", r#""maximum""#, "null", Maxima),
    ("args/com_read wait_timeout_s above its maximum", "error_type", r#""invalid_argument""#, r#""com_port_not_configured""#, Maxima),
    ("args/com_read wait_timeout_s above its maximum", "field", r#""wait_timeout_s""#, "null", Maxima),
    ("args/com_read wait_timeout_s above its maximum", "validator", r#""maximum""#, "null", Maxima),
    ("args/can_read max_frames above its maximum", "error_type", r#""invalid_argument""#, r#""can_bus_not_configured""#, Maxima),
    ("args/can_read max_frames above its maximum", "field", r#""max_frames""#, "null", Maxima),
    ("args/can_read max_frames above its maximum", "validator", r#""maximum""#, "null", Maxima),
    ("args/can_read wait_timeout_s above its maximum", "error_type", r#""invalid_argument""#, r#""can_bus_not_configured""#, Maxima),
    ("args/can_read wait_timeout_s above its maximum", "field", r#""wait_timeout_s""#, "null", Maxima),
    ("args/can_read wait_timeout_s above its maximum", "validator", r#""maximum""#, "null", Maxima),
    ("args/power_supply_status channel above its maximum", "error_type", r#""invalid_argument""#, r#""unknown_device""#, Maxima),
    ("args/power_supply_status channel above its maximum", "field", r#""channel""#, "null", Maxima),
    ("args/power_supply_status channel above its maximum", "validator", r#""maximum""#, "null", Maxima),
    ("args/power_supply_set channel above its maximum", "error_type", r#""invalid_argument""#, r#""unknown_device""#, Maxima),
    ("args/power_supply_set channel above its maximum", "field", r#""channel""#, "null", Maxima),
    ("args/power_supply_set channel above its maximum", "validator", r#""maximum""#, "null", Maxima),
    ("args/power_supply_set voltage_v above its maximum", "error_type", r#""invalid_argument""#, r#""unknown_device""#, Maxima),
    ("args/power_supply_set voltage_v above its maximum", "field", r#""voltage_v""#, "null", Maxima),
    ("args/power_supply_set voltage_v above its maximum", "validator", r#""maximum""#, "null", Maxima),
    ("args/power_supply_set current_a above its maximum", "error_type", r#""invalid_argument""#, r#""unknown_device""#, Maxima),
    ("args/power_supply_set current_a above its maximum", "field", r#""current_a""#, "null", Maxima),
    ("args/power_supply_set current_a above its maximum", "validator", r#""maximum""#, "null", Maxima),
    ("args/power_supply_output channel above its maximum", "error_type", r#""invalid_argument""#, r#""unknown_device""#, Maxima),
    ("args/power_supply_output channel above its maximum", "field", r#""channel""#, "null", Maxima),
    ("args/power_supply_output channel above its maximum", "validator", r#""maximum""#, "null", Maxima),
    ("args/power_supply_cycle channel above its maximum", "error_type", r#""invalid_argument""#, r#""unknown_device""#, Maxima),
    ("args/power_supply_cycle channel above its maximum", "field", r#""channel""#, "null", Maxima),
    ("args/power_supply_cycle channel above its maximum", "validator", r#""maximum""#, "null", Maxima),
    ("args/flash_firmware capture without a port", "field", r#""capture""#, r#""capture.port_id""#, OursAlone),
    ("args/flash_firmware capture without a port", "validator", r#""oneOf""#, r#""required""#, OursAlone),
    // Test plans through test_reactor_run (plans.rs).
    ("plans/valid 01-spec-example-v5.yaml", "error_type", r#""artifact_not_found""#, r#""test_config_invalid""#, PreflightCause),
    ("plans/valid 02-demo-v3.yaml", "error_type", r#""artifact_not_found""#, r#""test_config_invalid""#, PreflightCause),
    ("plans/valid 03-aliases-v2.yaml", "error_type", r#""artifact_not_found""#, r#""test_config_invalid""#, PreflightCause),
    ("plans/valid 04-participants-v6.yaml", "error_type", r#""unknown_device""#, r#""test_config_invalid""#, PreflightCause),
    ("plans/valid 04-participants-v6.yaml", "field|validation_error.field", r#""steps[0].device""#, r#""steps[0].bus_id""#, PreflightCause),
    ("plans/valid 05-nested-repeat-v5.json", "error_type", r#""artifact_not_found""#, r#""test_config_invalid""#, PreflightCause),
    ("plans/unknown-device.yaml", "error_type", r#""unknown_device""#, r#""test_config_invalid""#, PreflightCause),
    ("plans/unknown-device.yaml", "field|validation_error.field", r#""steps[0].device""#, r#""steps[0].port_id""#, PreflightCause),
    ("plans/unknown-debugger.yaml", "error_type", r#""unknown_device""#, r#""test_config_invalid""#, PreflightCause),
    ("plans/unknown-debugger.yaml", "field|validation_error.field", r#""steps[0].device""#, r#""steps[0].debugger""#, PreflightCause),
    ("plans/debugger-as-port.yaml", "error_type", r#""unknown_device""#, r#""test_config_invalid""#, PreflightCause),
    ("plans/debugger-as-port.yaml", "field|validation_error.field", r#""steps[0].device""#, r#""steps[0].port_id""#, PreflightCause),
    ("plans/debugger-as-bus.yaml", "error_type", r#""unknown_device""#, r#""test_config_invalid""#, PreflightCause),
    ("plans/debugger-as-bus.yaml", "field|validation_error.field", r#""steps[0].device""#, r#""steps[0].bus_id""#, PreflightCause),
    ("plans/image-outside.yaml", "error_type", r#""artifact_validation_failed""#, r#""test_config_invalid""#, PreflightCause),
    ("plans/image-absolute.yaml", "error_type", r#""artifact_validation_failed""#, r#""test_config_invalid""#, PreflightCause),
];
