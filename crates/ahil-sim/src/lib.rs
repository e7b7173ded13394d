//! `ahil-sim`: simulators and fakes for the tests and the demo, linked into no product crate. The
//! CAN bridge ([`can_bridge`]) and bench supply ([`psu_sim`]) simulators are their own executables
//! (`src/bin/`, found by other packages' tests through [`executables`]), and so are the benchmarks'
//! floors ([`floor`]); [`uart`] is a test reader for the emulated board's pty, and [`firmware`] locates the
//! committed test firmware. The emulated board itself (its supervisor) lives with the `qemu` backend
//! in `ahil_drivers::qemu::board`; it is re-exported here so tests keep one import.

pub mod can_bridge;
pub mod executables;
pub mod firmware;
pub mod floor;
pub mod labgrid;
pub mod psu_sim;
pub mod uart;

pub use ahil_drivers::qemu::board;
pub use ahil_drivers::qemu::board::{Board, BoardConfig, BoardError, BoardState};
/// The emulated board's RAM and its RTT, for the `rtt_read` benchmark's observer and floor.
pub use ahil_drivers::qemu::{BoardPaths, memory::QemuMemory};
pub use ahil_drivers::rtt;
/// The controlling side of a pty pair, for the benchmarks' serial floor.
pub use ahil_drivers::serial::PtyPeer;
pub use uart::Uart;
