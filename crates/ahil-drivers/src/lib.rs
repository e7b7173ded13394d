//! `ahil-drivers`: everything that touches a device or a toolchain, behind small APIs, with no policy.
//!
//! Drivers report what they know (exit codes, output, [`Contact`]); the gate decides what it means for
//! permissions, retry safety and incidents.

pub mod can;
pub mod cubeprog;
pub mod error;
pub mod esptool;
pub mod gdbmi;
pub mod listeners;
pub mod openocd;
pub mod probe;
pub mod probe_cli;
pub mod probe_rs;
pub mod probe_rs_memory;
pub mod probe_rs_worker;
pub mod process;
pub mod psu;
pub mod pyocd;
pub mod qemu;
pub mod rtt;
pub mod serial;
pub mod version;
mod worker;

pub use error::{Contact, DriverError};
pub use version::{Backend, VersionReport, debugger_version};
