use super::*;
use crate::testkit::syncs_during;

fn locks(home: &Path, frontend: &str) -> DeviceLocks {
    DeviceLocks::new(LockRoot::for_home(home), Owner::this_process(frontend))
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// Two owners in one HOME: an MCP server and one of `second`.
fn two_owners(second: &str) -> (tempfile::TempDir, DeviceLocks, DeviceLocks) {
    let home = tempfile::tempdir().expect("home");
    let first = locks(home.path(), "mcp");
    let second = locks(home.path(), second);
    (home, first, second)
}

/// `owner` taking `keys` at once, without waiting for a holder to let go.
fn take(owner: &DeviceLocks, keys: &[&str]) -> Result<Acquired, Box<Busy>> {
    owner.acquire(&names(keys), Duration::ZERO)
}

fn assert_holder_states(owner: &DeviceLocks, devices: &[String], state: &str) {
    for device in devices {
        assert_eq!(
            DeviceLocks::read_holder(&owner.roots[0], device).expect("record")["state"],
            json!(state),
            "{device}"
        );
    }
}

#[test]
fn lock_files_are_named_by_the_sha256_of_the_resource() {
    let root = LockRoot::for_home(Path::new("/home/op"));
    // sha256("probe:abc"), as the reference names the file.
    assert_eq!(
        root.lock_path("probe:abc"),
        PathBuf::from(
            "/home/op/.agentic-hil/device-locks/3709bdb99edd145af2811c8d746ce2468dd5cd8df406641847ce356579cbcde3.lock"
        )
    );
}

#[test]
fn a_second_owner_is_refused_naming_the_holder() {
    let (_home, first, second) = two_owners("operator-cli");
    take(&first, &["probe:abc"]).expect("free device");
    let busy = take(&second, &["probe:abc"]).expect_err("held by the first owner");
    assert_eq!(busy.resource, "probe:abc");
    let holder = busy.holder.clone().expect("holder record read");
    assert_eq!(holder["owner_id"], json!(first.owner().owner_id));
    assert_eq!(holder["frontend"], json!("mcp"));
    let outcome = busy.into_outcome("bench_run_start");
    assert_eq!(outcome.error_type.as_deref(), Some("device_busy"));
    assert_eq!(outcome.retry_safe, Some(true));
    assert!(outcome.summary.contains("(mcp)"), "{}", outcome.summary);
}

#[test]
fn release_frees_the_device_and_says_so_in_the_holder_record() {
    let (_home, first, second) = two_owners("mcp");
    take(&first, &["com:serial:abc"]).expect("free");
    first.release(&names(&["com:serial:abc"]));
    let taken = take(&second, &["com:serial:abc"]).expect("freed");
    assert!(
        taken.reclaimed.is_empty(),
        "a clean release is not a reclaim"
    );
}

#[test]
fn re_acquiring_counts_holds_and_the_last_release_frees() {
    let (_home, owner, other) = two_owners("mcp");
    let keys = names(&["probe:abc"]);
    take(&owner, &["probe:abc"]).expect("first hold");
    take(&owner, &["probe:abc"]).expect("second hold by the same owner");
    owner.release(&keys);
    assert!(take(&other, &["probe:abc"]).is_err(), "one hold remains");
    owner.release(&keys);
    assert!(take(&other, &["probe:abc"]).is_ok());
}

#[test]
fn acquisition_is_all_or_nothing() {
    let (home, a, b) = two_owners("mcp");
    take(&b, &["probe:two"]).expect("b holds two");
    let busy = take(&a, &["probe:one", "probe:two"]).expect_err("two is held");
    assert_eq!(busy.resource, "probe:two");
    assert!(a.held().is_empty(), "probe:one was given back");
    let c = locks(home.path(), "mcp");
    take(&c, &["probe:one"]).expect("probe:one is free again");
}

#[test]
fn non_physical_names_take_no_machine_wide_lock() {
    let (_home, a, b) = two_owners("mcp");
    let keys = ["debugger-discovery:all", "project:abc"];
    take(&a, &keys).expect("nothing physical");
    take(&b, &keys).expect("nothing physical");
    assert!(a.held().is_empty());
}

#[test]
fn waiting_retries_until_the_holder_lets_go() {
    let home = tempfile::tempdir().expect("home");
    let holder = std::sync::Arc::new(locks(home.path(), "mcp"));
    let waiter = locks(home.path(), "mcp");
    let keys = names(&["probe:abc"]);
    holder.acquire(&keys, Duration::ZERO).expect("free");
    let releaser = {
        let holder = holder.clone();
        let keys = keys.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            holder.release(&keys);
        })
    };
    waiter
        .acquire(&keys, Duration::from_secs(5))
        .expect("taken once released");
    releaser.join().expect("releaser thread");
}

#[test]
fn a_symlinked_lock_directory_is_refused() {
    let home = tempfile::tempdir().expect("home");
    let elsewhere = tempfile::tempdir().expect("elsewhere");
    fs::create_dir(home.path().join(".agentic-hil")).expect("dir");
    std::os::unix::fs::symlink(
        elsewhere.path(),
        home.path().join(".agentic-hil/device-locks"),
    )
    .expect("plant symlink");
    let busy = take(&locks(home.path(), "mcp"), &["probe:abc"]).expect_err("refused");
    assert!(busy.error_class.is_some());
    assert_eq!(
        fs::read_dir(elsewhere.path()).expect("list").count(),
        0,
        "nothing written through the link"
    );
}

#[test]
fn dropping_the_owner_releases_everything() {
    let home = tempfile::tempdir().expect("home");
    let keys = names(&["probe:abc", "com:/dev/ttyACM0"]);
    {
        let owner = locks(home.path(), "mcp");
        owner.acquire(&keys, Duration::ZERO).expect("free");
    }
    let next = locks(home.path(), "mcp");
    let taken = next.acquire(&keys, Duration::ZERO).expect("freed on drop");
    assert!(taken.reclaimed.is_empty());
}

#[test]
fn a_released_lock_is_free_while_another_descriptor_still_shares_its_file() {
    let (_home, first, second) = two_owners("operator-cli");
    take(&first, &["probe:abc"]).expect("free device");
    // What a child forked by another thread holds until its exec: the same open lock file.
    let shared = first
        .shared_file("probe:abc")
        .expect("the held lock's file");
    first.release(&names(&["probe:abc"]));
    let taken = take(&second, &["probe:abc"]);
    drop(shared);
    taken.expect("the released device is free while its file is still shared");
}

#[test]
fn taking_and_giving_back_several_devices_syncs_each_holder_record_and_their_directory_once() {
    let home = tempfile::tempdir().expect("home");
    let owner = locks(home.path(), "mcp");
    let devices = names(&["com:uart0", "physical:/dev/ttyACM0", "probe:abc"]);
    let (taken, syncs) = syncs_during(|| owner.acquire(&devices, Duration::ZERO));
    taken.expect("free devices");
    assert_eq!(syncs, 3 + 1, "three records, one directory");
    assert_holder_states(&owner, &devices, "held");
    let ((), syncs) = syncs_during(|| owner.release(&devices));
    assert_eq!(syncs, 3 + 1);
    assert_holder_states(&owner, &devices, "released");
}

/// The ownership of a server whose HOME is `home` and whose account's home is `account`.
fn server(account: &Path, home: &Path) -> DeviceLocks {
    crate::ownership::Ownership::in_homes(account, home, "mcp").locks
}

#[test]
fn a_server_given_another_home_meets_a_holder_in_that_homes_root_as_the_reference_would() {
    let account = tempfile::tempdir().expect("the account's home");
    let home = tempfile::tempdir().expect("the HOME the server was given");
    // The reference follows HOME: its lock is in the HOME's root only.
    let reference = locks(home.path(), "reference");
    take(&reference, &["probe:abc"]).expect("free device");
    let ours = server(account.path(), home.path());
    let busy = take(&ours, &["probe:abc"]).expect_err("held in the HOME's root");
    assert_eq!(busy.holder.expect("holder")["frontend"], json!("reference"));
    // Nothing of ours is left held in the account's root after the refusal.
    take(&locks(account.path(), "other"), &["probe:abc"]).expect("the account's root is free");
}

#[test]
fn a_server_given_another_home_holds_the_device_in_the_accounts_root_and_in_that_homes() {
    let account = tempfile::tempdir().expect("the account's home");
    let home = tempfile::tempdir().expect("the HOME the server was given");
    let ours = server(account.path(), home.path());
    take(&ours, &["probe:abc"]).expect("free device");
    for root in [account.path(), home.path()] {
        let busy = take(&locks(root, "other"), &["probe:abc"]).expect_err("held in both roots");
        assert_eq!(busy.holder.expect("holder")["frontend"], json!("mcp"));
    }
    ours.release(&names(&["probe:abc"]));
    for root in [account.path(), home.path()] {
        take(&locks(root, "other"), &["probe:abc"]).expect("released in both roots");
    }
}

#[test]
fn a_home_where_no_lock_folder_can_be_made_is_passed_over() {
    let account = tempfile::tempdir().expect("the account's home");
    let file = account.path().join("not-a-folder");
    std::fs::write(&file, "x").expect("a file as HOME");
    let ours = server(account.path(), &file);
    take(&ours, &["probe:abc"]).expect("the account's root is enough");
    take(&locks(account.path(), "other"), &["probe:abc"]).expect_err("held there");
}

#[test]
fn a_home_that_is_a_link_to_the_accounts_home_is_locked_once() {
    let account = tempfile::tempdir().expect("the account's home");
    let elsewhere = tempfile::tempdir().expect("a folder for the link");
    let link = elsewhere.path().join("home");
    std::os::unix::fs::symlink(account.path(), &link).expect("HOME links to the account's home");
    let ours = server(account.path(), &link);
    take(&ours, &["probe:abc"]).expect("not busy with its own lock");
    take(&locks(account.path(), "other"), &["probe:abc"]).expect_err("held");
}
