//! OpenOCD's output, sorted into the backend classes (first match wins).

use crate::probe_cli::any;

const NOT_FOUND: &[&str] = &["not found", "can't find", "couldn't find", "couldn't open"];

/// The class of OpenOCD's output. `flashing` enables the generic flash rule.
pub fn classify(
    output: &str,
    interface_cfg: &str,
    target_cfg: &str,
    flashing: bool,
) -> &'static str {
    let lower = output.to_lowercase();
    let names = |cfg: &str| {
        let cfg = cfg.to_lowercase();
        !cfg.is_empty()
            && lower
                .lines()
                .any(|line| line.contains(&cfg) && any(line, NOT_FOUND))
    };
    if names(interface_cfg) {
        return "interface_config_not_found";
    }
    if names(target_cfg) {
        return "target_config_not_found";
    }
    if any(
        &lower,
        &[
            "adapter not found",
            "no adapter",
            "no device found",
            "unable to open",
            "open failed",
            "libusb_open",
            "unable to find a matching cmsis-dap device",
            "no j-link device found",
        ],
    ) {
        return "adapter_not_found";
    }
    if any(
        &lower,
        &[
            "target not examined",
            "target not detected",
            "unable to connect",
            "failed to read",
        ],
    ) {
        return "target_not_detected";
    }
    // OpenOCD names the sector range it could not erase; nothing after that tells whether any sector
    // changed, so this class never proves the flash untouched.
    if lower.contains("failed erasing sectors") {
        return "flash_erase_failed";
    }
    if lower.contains("verify") && any(&lower, &["failed", "mismatch", "error"]) {
        return "verify_failed";
    }
    if lower.contains("reset") && any(&lower, &["failed", "error"]) {
        return "reset_failed";
    }
    if any(&lower, NOT_FOUND) {
        return "config_file_not_found";
    }
    if flashing && any(&lower, &["failed", "error"]) {
        return "flash_failed";
    }
    "unknown_debugger_error"
}
