//! Black-box: the operator's configuration cannot be shadowed by one an agent's server writes. The
//! agent's `.mcp.json` sets where a server looks for its configuration (HOME, `XDG_CONFIG_HOME`,
//! `AGENTIC_HIL_CONFIG`); an unprovisioned server's `project_config_create` writes only where the
//! account's own configuration would be.

mod support;

use serde_json::json;
use support::World;

/// The operator's configuration cannot be shadowed by one the agent has a server write: a server
/// whose `.mcp.json` points `XDG_CONFIG_HOME` at an empty folder finds no configuration there, but
/// its `project_config_create` is refused (`config_exists`, naming the operator's file) instead of
/// writing a first one, with a found board's grants, where only that server looks.
#[tokio::test]
async fn create_never_writes_a_configuration_that_shadows_the_accounts_own() {
    let world = World::provisioned();
    let state = world.home.join(".local/state/agentic-hil");
    let config = format!(
        "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n\
         target:\n  name: sim\n  controller: stm32f405\n\
         debuggers:\n  board:\n    type: qemu\n    timeout_s: 10\n    permissions:\n      allow_flash: false\n\
         artifacts:\n  allowed_roots: [fw]\n",
        ws = world.workspace.display(),
        state = state.display(),
    );
    std::fs::write(world.config_path(), config).expect("the operator forbids flashing");
    std::fs::create_dir_all(world.workspace.join("fw")).expect("fw");
    std::fs::copy(
        support::firmware_image(),
        world.workspace.join("fw/ahil-fw-v1.elf"),
    )
    .expect("firmware");
    let (doc, code) = world.run_json(&["sim", "start", "--image", "fw/ahil-fw-v1.elf"]);
    assert_eq!(code, Some(0), "sim start: {doc}");
    let _board = support::RunningBoard(&world);

    let elsewhere = tempfile::tempdir().expect("an empty configuration folder");
    let mut cmd = std::process::Command::new(World::binary());
    world.scrub(&mut cmd);
    cmd.env("XDG_CONFIG_HOME", elsewhere.path());
    let client = support::connect_command(cmd).await;
    let created = support::call(&client, "project_config_create", json!({}))
        .await
        .0;
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
    assert_eq!(
        std::fs::read_dir(elsewhere.path()).expect("folder").count(),
        0,
        "nothing was written where only this server looks"
    );
}

/// Nor does a server whose environment moved the search write a first configuration where only it
/// looks: the operator's `init` later writes where the account keeps it, which that server would
/// never read.
#[tokio::test]
async fn create_writes_no_first_configuration_where_only_a_redirected_server_looks() {
    let world = World::new();
    let elsewhere = tempfile::tempdir().expect("an empty configuration folder");
    let mut cmd = std::process::Command::new(World::binary());
    world.scrub(&mut cmd);
    cmd.env("XDG_CONFIG_HOME", elsewhere.path());
    let client = support::connect_command(cmd).await;
    let created = support::call(&client, "project_config_create", json!({}))
        .await
        .0;
    client.cancel().await.expect("closes");
    assert_eq!(created["error_type"], json!("config_invalid"), "{created}");
    assert_eq!(
        std::fs::read_dir(elsewhere.path()).expect("folder").count(),
        0,
        "nothing was written where only this server looks"
    );
    let (doc, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "the operator's init still writes it: {doc}");
}
