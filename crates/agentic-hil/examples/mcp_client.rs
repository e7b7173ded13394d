//! A minimal MCP host for the demo: launches `agentic-hil mcp-stdio` in the current directory with
//! rmcp's client, lists the tools, calls the ones named on the command line, and prints each answer's
//! first lines. Usage: mcp_client <path-to-agentic-hil> [tool | tool={"json": "arguments"} ...]
//! With `--brief` before the calls, the tool list is not printed and each answer shows its summary and
//! the fields named in `AHIL_SHOW` (comma-separated dotted paths, e.g. `capture.text,mode`). An
//! argument starting with `#` is printed as a heading between calls. Each call's wall time is shown.

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::Value;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).peekable();
    let binary = args
        .next()
        .ok_or("usage: mcp_client <agentic-hil> [--brief] [tool | tool={json} ...]")?;
    let brief = args.peek().is_some_and(|a| a == "--brief");
    if brief {
        args.next();
    }
    let show: Vec<String> = std::env::var("AHIL_SHOW")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
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
    if !brief {
        for tool in &tools {
            println!("  - {}", tool.name);
        }
    }
    for call in args {
        if let Some(heading) = call.strip_prefix('#') {
            println!("\n-- {}", heading.trim());
            continue;
        }
        let (name, arguments) = match call.split_once('=') {
            Some((name, json)) => match serde_json::from_str::<Value>(json)? {
                Value::Object(map) => (name.to_owned(), Some(map)),
                _ => return Err(format!("{name}: arguments must be a JSON object").into()),
            },
            None => (call.clone(), None),
        };
        let mut request = CallToolRequestParams::new(name.clone());
        if let Some(map) = arguments {
            request = request.with_arguments(map);
        }
        let started = std::time::Instant::now();
        let result = client.call_tool(request).await?;
        let took = started.elapsed();
        let doc = result.structured_content.unwrap_or_default();
        let verdict = if result.is_error == Some(true) {
            "isError"
        } else {
            "ok"
        };
        println!(
            "tools/call {name}: {verdict} ({:.1} ms)",
            took.as_secs_f64() * 1000.0
        );
        println!("  summary: {}", doc["summary"].as_str().unwrap_or(""));
        if let Some(error_type) = doc["error_type"].as_str() {
            println!("  error_type: {error_type}");
        }
        if brief {
            for path in &show {
                let value = path.split('.').fold(&doc, |v, key| &v[key]);
                if !value.is_null() {
                    let text = match value {
                        Value::String(s) => s.trim_end().replace('\n', "\n      "),
                        other => other.to_string(),
                    };
                    println!("  {path}: {text}");
                }
            }
        } else {
            let pretty = serde_json::to_string_pretty(&doc)?;
            for line in pretty.lines().take(14) {
                println!("  | {line}");
            }
        }
    }
    client.cancel().await?;
    Ok(())
}
