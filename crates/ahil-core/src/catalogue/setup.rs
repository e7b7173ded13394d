//! The declarations of the tools for configuration, artifacts and runs, in `tools/list` order.

use super::schemas::{
    artifact_upload_schema, bench_run_start_schema, config_adopt_schema, config_set_schema,
};
use super::{Declaration, Gate, Kind, Lease, ToolId, Touched, need};

pub(super) const DECLARED: &[Declaration] = &[
    Declaration::new(
        ToolId::DebuggerInfo,
        "debugger_info",
        Kind::ReadOnly,
        Gate::LOCAL
            .always_status()
            .needs(&[need(Touched::Debugger, "allow_probe")]),
    )
    .about(
        "Debugger backend availability",
        "Check that this bench's debugger toolchain runs: executes only `<executable> --version` \
(10 s at most) and never addresses a probe or the board. Needs exactly one configured debugger whose \
executable is pinned (a version 1 configuration also needs allow_probe). Returns backend, executable, \
probe_id, version and config_status. Fails with debugger_not_found, timeout, debugger_error, \
not_supported or permission_denied. Next: debugger_probes_list for probe ids, probe_target for the board.",
    ),
    Declaration::new(
        ToolId::ProjectConfigDescribe,
        "project_config_describe",
        Kind::ReadOnly,
        Gate::LOCAL.always_status(),
    )
    .about(
        "Describe the configuration",
        "Show the configuration this server enforces and what may change in it: the rights in \
force, writable_keys (current_value and value_schema), locked_keys (with the grant that unlocks each), \
patterns for new entries, and whether an open run blocks writes. Needs no permission and touches no \
hardware. Fails with config_invalid or config_unreadable when the file on disk cannot be read. Next: \
project_config_set with keys taken from writable_keys.",
    ),
    Declaration::new(
        ToolId::ProjectConfigCreate,
        "project_config_create",
        Kind::DESTRUCTIVE,
        Gate::LOCAL.audited(),
    )
    .about(
        "Generate the project configuration",
        "Read the bench (emulated boards under the state root, USB serial adapters) and write the \
whole configuration from it: new entries get the generated grants (raw debugger commands and mass erase \
false), known ones keep theirs. Works without a configuration; over one it needs \
permissions.allow_config_write. Answers what discovery ran and found, dropped_entries and reload_required. \
Fails with permission_denied, config_write_in_open_run, config_invalid or probe_inventory_incomplete \
(discovery saw nothing; `agentic-hil init` writes the starter file), writing nothing.",
    ),
    Declaration::new(ToolId::ProjectConfigSet, "project_config_set", Kind::DESTRUCTIVE, Gate::LOCAL)
        .schema(config_set_schema)
        .about(
            "Change configuration keys",
            "Change keys of the configuration file, all or none: description keys (target, debugger, \
COM and CAN fields) need permissions.allow_config_description_write; permission keys need \
permissions.allow_config_permissions_write and take only false, so an agent can narrow a grant but never \
open one. A new entry, or one pointed at another device, has every grant false; program keys are the \
operator's. Provenance records who changed what. Fails with permission_denied, permission_widening_denied, \
operator_only_key, invalid_argument, config_invalid (nothing written) or config_write_in_open_run. Next: \
project_config_reload_description.",
        ),
    Declaration::new(
        ToolId::ProjectConfigAdoptHardware,
        "project_config_adopt_hardware",
        Kind::IDEMPOTENT,
        Gate::LOCAL.audited(),
    )
    .schema(config_adopt_schema)
    .about(
        "Adopt attached hardware",
        "Read the attached board (the emulated board of a `type: qemu` debugger) and propose the \
configuration keys it can fill: target.controller and the COM port bound to its UART. Keys already holding \
another value are kept and reported, never overwritten. Writes only with apply: true (needs \
permissions.allow_config_description_write); a COM port it creates gets every grant false. Fails with \
target_not_detected, unknown_device, hardware_mismatch, not_supported or permission_denied. Next: \
project_config_reload_description.",
    ),
    Declaration::new(
        ToolId::ProjectConfigReloadDescription,
        "project_config_reload_description",
        Kind::ReadOnly,
        Gate::LOCAL,
    )
    .about(
        "Reload the bench description",
        "Put the file's current target, debuggers, com_ports and can_buses in force without a \
restart. Grants and every other section stay as the server loaded them; a device it did not know gets every \
grant false. Answers what changed, the grants the file holds that differ from those in force, and \
restart_required_for. Touches no hardware. Fails with config_invalid (the old description stays) or \
config_reload_in_open_run.",
    ),
    Declaration::new(ToolId::ArtifactUpload, "artifact_upload", Kind::IDEMPOTENT, Gate::LOCAL)
        .schema(artifact_upload_schema)
        .about(
            "Upload a firmware artifact",
            "Store a firmware image under artifacts.upload_directory and answer its artifact_id for \
flash_firmware or debug_start_session; touches no hardware. Give image_path (inside the workspace and \
artifacts.allowed_roots) or filename with data_base64 (padded base64). The id is the sha256 of the bytes plus \
the lowercased extension, so the same bytes and extension give the same id. Needs artifacts.allow_upload. Fails \
with permission_denied, invalid_argument, artifact_not_found, artifact_validation_failed, artifact_too_large or \
unsafe_configured_path.",
        ),
    Declaration::new(ToolId::BenchRunStart, "bench_run_start", Kind::ADDITIVE, Gate::LOCAL)
        .schema(bench_run_start_schema)
        .about(
            "Declare a bench run",
            "Hold the named devices machine-wide for a sequence of calls, so no other agent or \
program (this one or the Python agentic-hil) can drive them until bench_run_stop or until this server ends. \
devices: [{kind: debugger|uart|can|power_supply, id}], id optional for the only debugger; all are resolved \
before any is locked and taken all or none. Touches no hardware. Fails with unknown_device, invalid_argument, \
run_already_active, or device_busy naming the holder (pass wait_s to wait up to 900 s). With the operator's \
holds.max_run_s the gate stops the run by itself at hold_expires_at, and the next result says so (holds_expired).",
        ),
    Declaration::new(
        ToolId::BenchRunStop,
        "bench_run_stop",
        Kind::IDEMPOTENT,
        Gate::leased(
            Lease::RunEnd,
            "unknown_hardware_exception",
            "hardware_exception_audit_broken",
        ),
    )
    .about(
        "End the bench run",
        "End this server's run and release every device it held; ending when no run is open \
answers ok with run_was_active false. Touches no hardware. Next: bench_run_status to confirm nothing is held.",
    ),
    Declaration::new(ToolId::BenchRunStatus, "bench_run_status", Kind::ReadOnly, Gate::LOCAL)
        .about(
            "Bench run status",
            "Say whether this server has a run open, which devices it declared and holds, its label \
and owner. Reads only. Next: bench_run_stop to release, or bench_run_start to declare a run.",
        ),
];
