//! `ahil-wire`: text shapes shared by crates that cannot see each other, so each has one definition.
//! The client and the gate read the same continue predicate ([`verdict`]); the configuration writer
//! (YAML), the debugger driver (GDB/MI) and the audit (JSON) write double-quoted strings with the
//! same core of escapes ([`quote`]); the configuration's discovery and every child's environment take
//! one HOME, resolved once ([`home`]). A leaf: it names none of our crates, so the client can link it.

pub mod home;
pub mod quote;
pub mod verdict;

pub use verdict::{SuccessCheck, first_failed};

/// Whether this build reads the `AHIL_TEST_*` seams: only a `cargo test` build, whose dev-dependencies
/// turn the `test-seams` feature on. Every seam is read behind this one constant.
pub const TEST_SEAMS: bool = cfg!(feature = "test-seams");
