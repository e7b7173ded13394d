//! Where the committed test firmware lives (`firmware/build` at the repository root), so tests and the
//! demo need no cross compiler.

use std::path::PathBuf;

use ahil_drivers::probe::ImageFormat;

/// Where the firmware's raw BIN must be written: the flash base of both STM32 boards.
pub const FLASH_BASE: u64 = 0x0800_0000;

/// The QEMU machines the firmware is built for: the default first, then the second board
/// (STM32F100, Cortex-M3), whose images live in `build/<machine>/`.
pub const MACHINES: [&str; 2] = ["netduinoplus2", "stm32vldiscovery"];

/// The repository's `firmware/` directory.
pub fn source_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../firmware")
}

/// A built image for the default board: `version` 1 or 2, `extension` `elf`, `hex` or `bin`.
pub fn image(version: u8, extension: &str) -> PathBuf {
    image_for(MACHINES[0], version, extension)
}

/// A built image for `machine` (one of [`MACHINES`]).
pub fn image_for(machine: &str, version: u8, extension: &str) -> PathBuf {
    let build = source_dir().join("build");
    let dir = if machine == MACHINES[0] {
        build
    } else {
        build.join(machine)
    };
    dir.join(format!("ahil-fw-v{version}.{extension}"))
}

/// The loader format of an image extension.
pub fn format_of(extension: &str) -> Option<ImageFormat> {
    match extension {
        "elf" => Some(ImageFormat::Elf),
        "hex" => Some(ImageFormat::Hex),
        "bin" => Some(ImageFormat::Bin { base: FLASH_BASE }),
        _ => None,
    }
}

/// The version line the default board's image prints after `boot ok`.
pub fn version_line(version: u8) -> String {
    version_line_for(MACHINES[0], version)
}

/// The version line `machine`'s image prints after `boot ok`.
pub fn version_line_for(machine: &str, version: u8) -> String {
    format!("ahil-fw {version}.0 {machine}")
}
