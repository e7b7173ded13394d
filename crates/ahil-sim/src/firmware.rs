//! Where the committed test firmware lives (`firmware/build` at the repository root), so tests and the
//! demo need no cross compiler.

use std::path::PathBuf;

use ahil_drivers::probe::ImageFormat;

/// Where the firmware's raw BIN must be written: the STM32F405 flash base.
pub const FLASH_BASE: u64 = 0x0800_0000;

/// The repository's `firmware/` directory.
pub fn source_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../firmware")
}

/// A built image: `version` 1 or 2, `extension` `elf`, `hex` or `bin`.
pub fn image(version: u8, extension: &str) -> PathBuf {
    source_dir()
        .join("build")
        .join(format!("ahil-fw-v{version}.{extension}"))
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

/// The version line the image prints after `boot ok`.
pub fn version_line(version: u8) -> String {
    format!("ahil-fw {version}.0 netduinoplus2")
}
