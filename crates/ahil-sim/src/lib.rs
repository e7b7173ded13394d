//! `ahil-sim`: the simulated bench. An emulated Cortex-M board in QEMU under a small supervisor
//! ([`board`]), its UART ([`uart`]), and our test firmware ([`firmware`]); the demo and the end-to-end
//! tests drive it through the same driver traits as real hardware (`ahil_drivers::qemu`).

pub mod board;
pub mod can_bridge;
pub mod firmware;
pub mod psu_sim;
pub mod uart;

pub use board::{Board, BoardConfig, BoardState, SimError};
pub use uart::Uart;
