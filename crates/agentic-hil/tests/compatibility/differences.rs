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
    Frames, HeldCapturePort, LoneParticipant, NoPaths, OursAlone, PlanDevice, Programs, RetrySafe,
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
];
