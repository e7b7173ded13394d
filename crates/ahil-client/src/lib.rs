//! A client for `agentic-hil mcp-stdio`: `cargo test` suites reach the bench through the same gate as
//! an agent, with the operator's configuration deciding what is allowed.
//!
//! ```no_run
//! use ahil_client::{Client, DebugMode};
//! use serde_json::json;
//!
//! let mut bench = Client::spawn("/path/to/workspace", [("RUST_LOG", "warn")])?;
//! let flashed = bench.call("flash_firmware", json!({"image_path": "fw/app.elf"}))?;
//! assert!(flashed.overall_success(), "{flashed}");
//! bench.debug_start_session("fw/app.elf", DebugMode::Attach)?;
//! let value = bench.debug_symbol_value("g_u32")?;
//! assert_eq!(value["value_unsigned"], 0xDEAD_BEEF_u32);
//! bench.close()?; // ends the debug session, and says so if the stop was not confirmed
//! # Ok::<(), ahil_client::ClientError>(())
//! ```

mod client;
mod envelope;
mod error;
mod sessions;
mod tools;
mod transport;

pub use client::{BINARY_ENV_VAR, Client, Launch, ResultCheck};
pub use envelope::{Envelope, SuccessCheck, overall_success};
pub use error::ClientError;
pub use tools::{Capture, DebugMode, FlashOptions, ReadOptions, ResetMode};
