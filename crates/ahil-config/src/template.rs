//! The file `init` writes when it found no board to describe.

use std::path::Path;

const BODY: &str = r#"# Version 3: reading a device needs no grant (a run locks every device it names
# for its whole duration), and every com_ports entry must say which adapter it is:
# a serial_number, a resource_id, a /dev/serial/by-id/ device, or identity_source.
# Files without this key are read as version 1; versions 1 and 2 still load.
version: 3

# Grants about this project rather than a device. Over MCP an agent can only write
# `false` into a permission, so it can narrow this file and never widen it;
# `agentic-hil init --force` rewrites it at these defaults.
permissions:
  allow_config_write: true
  allow_config_description_write: true
  allow_config_permissions_write: true
  allow_recover: true
  allow_upgrade: true

target:
  name: "example-target"
  controller: "unknown-controller"

# One entry per debug probe; its permissions cover that probe only. With one entry
# the MCP tools bind it automatically. This starter names no toolchain and no probe,
# so it drives nothing until `agentic-hil adopt-hardware` (or you) fills it in.
debuggers:
  dut:
    type: "openocd"
    executable: null
    probe_id: null
    target_type: null
    # OpenOCD script search names; OpenOCD finds them itself. An absolute path to a
    # script outside the workspace works too.
    interface_cfg: "interface/stlink.cfg"
    target_cfg: "target/stm32f4x.cfg"
    timeout_s: 60
    permissions:
      allow_flash: true
      allow_reset: true
      allow_debug_execution: true
      # Either of these being true refuses validated flashing and debug sessions on
      # this probe, and no tool uses them, so they stay false.
      allow_raw_debugger_commands: false
      allow_mass_erase: false

debug:
  gdb_executable: null
  allowed_symbols: []
  allow_all_symbols: true
  max_dump_size_bytes: 1048576

artifacts:
  # "." allows firmware from anywhere inside the workspace; list directories to narrow.
  allowed_roots:
    - "."
  upload_directory: ".agentic-hil/artifacts"
  allowed_extensions:
    - ".elf"
    - ".hex"
    - ".bin"
  max_upload_size_mb: 64
  allow_upload: true

com_ports: {}

can_buses: {}

validation:
  require_existing_file: true
  require_allowed_root: true
  require_allowed_extension: true
  compute_sha256: true
  inspect_known_formats: true

reports:
  directory: ".agentic-hil/reports"

logs:
  directory: ".agentic-hil/logs"

# How far the owning process may settle its own incidents: "off" (never),
# "readonly" (reap and re-read, touch nothing), "reset_halt" (may also reset into halt).
recovery:
  auto_recover: "reset_halt"
  max_attempts: 3
"#;

/// The version-3 starter configuration for a workspace, as `init` writes it without a
/// bench: both roots JSON-quoted on the first two lines, then the commented body.
pub fn render_init_config(workspace_root: &Path, state_root: &Path) -> String {
    let quote = |p: &Path| {
        serde_json::to_string(&p.to_string_lossy()).unwrap_or_else(|_| "\"\"".to_owned())
    };
    format!(
        "workspace_root: {}\nstate_root: {}\n\n{BODY}",
        quote(workspace_root),
        quote(state_root)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AutoRecover, DebuggerType};

    #[test]
    fn the_starter_grants_everything_but_the_two_flash_blockers() {
        let text = render_init_config(Path::new("/w/proj"), Path::new("/s/agentic-hil"));
        let (cfg, explicit) = crate::load::parse_document(text.as_bytes(), Path::new("/home/x"))
            .expect("template parses");
        assert!(explicit);
        assert_eq!(cfg.version, 3);
        let d = &cfg.debuggers["dut"];
        assert_eq!(d.kind, DebuggerType::Openocd);
        assert!(d.is_placeholder_starter());
        assert!(
            d.permissions.allow_flash
                && d.permissions.allow_reset
                && d.permissions.allow_debug_execution
        );
        assert!(!d.permissions.blocks_validated_flashing());
        assert!(cfg.permissions.allow_upgrade && cfg.permissions.allow_recover);
        assert!(cfg.debug.allow_all_symbols && cfg.artifacts.allow_upload);
        assert_eq!(cfg.artifacts.allowed_roots, vec!["."]);
        assert_eq!(cfg.recovery.auto_recover, AutoRecover::ResetHalt);
        assert!(cfg.is_placeholder_controller());
    }

    #[test]
    fn roots_are_json_quoted() {
        let text = render_init_config(Path::new("/w/a \"q\""), Path::new("/s"));
        assert!(text.starts_with("workspace_root: \"/w/a \\\"q\\\"\"\nstate_root: \"/s\"\n\n"));
    }
}
