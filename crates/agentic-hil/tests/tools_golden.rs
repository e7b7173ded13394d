//! `tools/list` is a golden file: a changed name, schema, annotation or description is a reviewed
//! change, never an accident. Regenerate with `AHIL_UPDATE_GOLDEN=1 cargo test -p agentic-hil --test
//! tools_golden` and review the diff.

mod support;

use support::{World, connect};

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/tools_list.json");

/// What a provisioned server lists.
async fn listed_tools() -> Vec<rmcp::model::Tool> {
    let world = World::new();
    world.run_json(&["init"]);
    let client = connect(&world).await;
    let tools = client.list_all_tools().await.expect("tools/list answers");
    client.cancel().await.expect("closes");
    tools
}

#[tokio::test]
async fn the_tool_listing_matches_the_reviewed_golden_file() {
    let tools = listed_tools().await;
    let mut listing = serde_json::to_string_pretty(&tools).expect("tools serialize");
    listing.push('\n');
    if std::env::var_os("AHIL_UPDATE_GOLDEN").is_some() {
        std::fs::write(GOLDEN, &listing).expect("write the golden file");
        return;
    }
    let golden = std::fs::read_to_string(GOLDEN).expect("the golden file exists");
    assert!(
        golden == listing,
        "tools/list changed; review it and regenerate with AHIL_UPDATE_GOLDEN=1 (see this file's header)"
    );
}

#[tokio::test]
async fn every_listed_tool_publishes_the_output_schema_its_results_are_checked_against() {
    let tools = listed_tools().await;
    assert_eq!(
        tools.len(),
        ahil_gate::tools(true).len(),
        "every catalogue tool is listed"
    );
    for tool in tools {
        let published = tool
            .output_schema
            .unwrap_or_else(|| panic!("{} publishes no outputSchema", tool.name));
        assert_eq!(
            serde_json::Value::Object((*published).clone()),
            ahil_gate::catalogue_output::output_schema(
                tool.name
                    .parse::<ahil_gate::catalogue::ToolId>()
                    .expect("a listed tool is declared")
            ),
            "{}: the published schema is the one the test clients check",
            tool.name
        );
    }
}
