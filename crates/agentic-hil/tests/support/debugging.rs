//! Steps of a debug session that every debugger backend's tests take alike.

use serde_json::json;

use super::{Client, ok};

/// Sets a breakpoint on the firmware's `on_tick` and continues (for 5 s at most): the core runs
/// and halts at the breakpoint, not at a timeout or an exit.
pub async fn run_to_the_tick_breakpoint(client: &Client) {
    ok(
        client,
        "debug_set_breakpoint",
        json!({"location": "on_tick"}),
    )
    .await;
    let doc = ok(client, "debug_continue", json!({"timeout_s": 5})).await;
    assert_eq!(doc["stop_reason"], "breakpoint_hit", "{doc}");
}
