//! Black-box: the operator's configuration cannot be shadowed by one an agent's server writes. The
//! agent's `.mcp.json` sets where a server looks for its configuration (HOME, `XDG_CONFIG_HOME`,
//! `AGENTIC_HIL_CONFIG`); an unprovisioned server's `project_config_create` writes only where the
//! account's own configuration would be.

mod support;

use rmcp::RoleClient;
use rmcp::service::RunningService;
use serde_json::{Value, json};
use support::World;
use support::sim_board::{SIM_TARGET, provisioned_board};

/// `project_config_create` from a server of `world` whose `.mcp.json` points `XDG_CONFIG_HOME` at
/// an empty folder of its own: the folder, the open client and the answer.
async fn create_where_only_a_redirected_server_looks(
    world: &World,
) -> (tempfile::TempDir, RunningService<RoleClient, ()>, Value) {
    let elsewhere = tempfile::tempdir().expect("an empty configuration folder");
    let mut cmd = std::process::Command::new(World::binary());
    world.scrub(&mut cmd);
    cmd.env("XDG_CONFIG_HOME", elsewhere.path());
    let client = support::connect_command(cmd).await;
    let created = support::call(&client, "project_config_create", json!({}))
        .await
        .0;
    (elsewhere, client, created)
}

fn assert_nothing_in(elsewhere: &tempfile::TempDir) {
    assert_eq!(
        std::fs::read_dir(elsewhere.path()).expect("folder").count(),
        0,
        "nothing was written where only this server looks"
    );
}

/// The operator's configuration cannot be shadowed by one the agent has a server write: a server
/// whose `.mcp.json` points `XDG_CONFIG_HOME` at an empty folder finds no configuration there, but
/// its `project_config_create` is refused (`config_exists`, naming the operator's file) instead of
/// writing a first one, with a found board's grants, where only that server looks.
#[tokio::test]
async fn create_never_writes_a_configuration_that_shadows_the_accounts_own() {
    let world = provisioned_board(SIM_TARGET, "      allow_flash: false\n");
    let _board = support::RunningBoard::start(&world, "fw/ahil-fw-v1.elf");

    let (elsewhere, client, created) = create_where_only_a_redirected_server_looks(&world).await;
    let (flashed, _) = support::call(
        &client,
        "flash_firmware",
        json!({"image_path": "fw/ahil-fw-v1.elf"}),
    )
    .await;
    client.cancel().await.expect("closes");
    assert_ne!(
        flashed["ok"],
        json!(true),
        "the board was flashed: {flashed}"
    );
    assert_eq!(created["error_type"], json!("config_exists"), "{created}");
    assert_nothing_in(&elsewhere);
}

/// Nor does a server whose environment moved the search write a first configuration where only it
/// looks: the operator's `init` later writes where the account keeps it, which that server would
/// never read.
#[tokio::test]
async fn create_writes_no_first_configuration_where_only_a_redirected_server_looks() {
    let world = World::new();
    let (elsewhere, client, created) = create_where_only_a_redirected_server_looks(&world).await;
    client.cancel().await.expect("closes");
    assert_eq!(created["error_type"], json!("config_invalid"), "{created}");
    assert_nothing_in(&elsewhere);
    let (doc, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "the operator's init still writes it: {doc}");
}
