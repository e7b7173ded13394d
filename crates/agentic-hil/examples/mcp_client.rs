//! A minimal MCP host for the demo: launches `agentic-hil mcp-stdio` in the current directory with
//! rmcp's client, lists the tools, calls the ones named on the command line, and prints each answer's
//! first lines. Usage: mcp_client <path-to-agentic-hil> [tool ...]

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let binary = args
        .next()
        .ok_or("usage: mcp_client <agentic-hil> [tool ...]")?;
    let mut cmd = tokio::process::Command::new(binary);
    cmd.arg("mcp-stdio");
    let client = ().serve(TokioChildProcess::new(cmd)?).await?;
    if let Some(info) = client.peer_info() {
        println!(
            "connected: {} {} (protocol {})",
            info.server_info.as_ref().map_or("?", |s| s.name.as_str()),
            info.server_info
                .as_ref()
                .map_or("?", |s| s.version.as_str()),
            info.protocol_version
        );
    }
    let tools = client.list_all_tools().await?;
    println!("tools/list: {} tool(s)", tools.len());
    for tool in &tools {
        println!("  - {}", tool.name);
    }
    for name in args {
        let result = client
            .call_tool(CallToolRequestParams::new(name.clone()))
            .await?;
        let doc = result.structured_content.unwrap_or_default();
        let verdict = if result.is_error == Some(true) {
            "isError"
        } else {
            "ok"
        };
        println!("tools/call {name}: {verdict}");
        println!("  summary: {}", doc["summary"].as_str().unwrap_or(""));
        if let Some(error_type) = doc["error_type"].as_str() {
            println!("  error_type: {error_type}");
        }
        let pretty = serde_json::to_string_pretty(&doc)?;
        for line in pretty.lines().take(14) {
            println!("  | {line}");
        }
    }
    client.cancel().await?;
    Ok(())
}
