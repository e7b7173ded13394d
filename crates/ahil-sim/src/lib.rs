//! `ahil-sim`: the simulated bench (an emulated Cortex-M board in QEMU, a CAN bridge simulator) that
//! the demo and the end-to-end tests drive through the same driver traits as real hardware.
//!
//! Empty until the emulated-board issue lands; it exists now so the crate graph is the one the
//! architecture draws.
