use super::*;

fn locks(home: &Path, frontend: &str) -> DeviceLocks {
    DeviceLocks::new(LockRoot::for_home(home), Owner::this_process(frontend))
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
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
    let home = tempfile::tempdir().expect("home");
    let first = locks(home.path(), "mcp");
    let second = locks(home.path(), "operator-cli");
    first
        .acquire(&names(&["probe:abc"]), Duration::ZERO)
        .expect("free device");
    let busy = second
        .acquire(&names(&["probe:abc"]), Duration::ZERO)
        .expect_err("held by the first owner");
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
    let home = tempfile::tempdir().expect("home");
    let first = locks(home.path(), "mcp");
    let second = locks(home.path(), "mcp");
    let keys = names(&["com:serial:abc"]);
    first.acquire(&keys, Duration::ZERO).expect("free");
    first.release(&keys);
    let taken = second.acquire(&keys, Duration::ZERO).expect("freed");
    assert!(
        taken.reclaimed.is_empty(),
        "a clean release is not a reclaim"
    );
}

#[test]
fn re_acquiring_counts_holds_and_the_last_release_frees() {
    let home = tempfile::tempdir().expect("home");
    let owner = locks(home.path(), "mcp");
    let other = locks(home.path(), "mcp");
    let keys = names(&["probe:abc"]);
    owner.acquire(&keys, Duration::ZERO).expect("first hold");
    owner
        .acquire(&keys, Duration::ZERO)
        .expect("second hold by the same owner");
    owner.release(&keys);
    assert!(
        other.acquire(&keys, Duration::ZERO).is_err(),
        "one hold remains"
    );
    owner.release(&keys);
    assert!(other.acquire(&keys, Duration::ZERO).is_ok());
}

#[test]
fn acquisition_is_all_or_nothing() {
    let home = tempfile::tempdir().expect("home");
    let a = locks(home.path(), "mcp");
    let b = locks(home.path(), "mcp");
    b.acquire(&names(&["probe:two"]), Duration::ZERO)
        .expect("b holds two");
    let busy = a
        .acquire(&names(&["probe:one", "probe:two"]), Duration::ZERO)
        .expect_err("two is held");
    assert_eq!(busy.resource, "probe:two");
    assert!(a.held().is_empty(), "probe:one was given back");
    let c = locks(home.path(), "mcp");
    c.acquire(&names(&["probe:one"]), Duration::ZERO)
        .expect("probe:one is free again");
}

#[test]
fn non_physical_names_take_no_machine_wide_lock() {
    let home = tempfile::tempdir().expect("home");
    let a = locks(home.path(), "mcp");
    let b = locks(home.path(), "mcp");
    let keys = names(&["debugger-discovery:all", "project:abc"]);
    a.acquire(&keys, Duration::ZERO).expect("nothing physical");
    b.acquire(&keys, Duration::ZERO).expect("nothing physical");
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
    let busy = locks(home.path(), "mcp")
        .acquire(&names(&["probe:abc"]), Duration::ZERO)
        .expect_err("refused");
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
    let home = tempfile::tempdir().expect("home");
    let first = locks(home.path(), "mcp");
    let second = locks(home.path(), "operator-cli");
    let keys = names(&["probe:abc"]);
    first.acquire(&keys, Duration::ZERO).expect("free device");
    // What a child forked by another thread holds until its exec: the same open lock file.
    let shared = first
        .shared_file("probe:abc")
        .expect("the held lock's file");
    first.release(&keys);
    let taken = second.acquire(&keys, Duration::ZERO);
    drop(shared);
    taken.expect("the released device is free while its file is still shared");
}

#[test]
fn taking_and_giving_back_several_devices_syncs_each_holder_record_and_their_directory_once() {
    let home = tempfile::tempdir().expect("home");
    let owner = locks(home.path(), "mcp");
    let devices = names(&["com:uart0", "physical:/dev/ttyACM0", "probe:abc"]);
    let before = fsio::syncs_on_this_thread();
    owner
        .acquire(&devices, Duration::ZERO)
        .expect("free devices");
    let taken = fsio::syncs_on_this_thread() - before;
    assert_eq!(taken, 3 + 1, "three records, one directory");
    for device in &devices {
        assert_eq!(
            owner.read_holder(device).expect("record")["state"],
            json!("held")
        );
    }
    let before = fsio::syncs_on_this_thread();
    owner.release(&devices);
    assert_eq!(fsio::syncs_on_this_thread() - before, 3 + 1);
    for device in &devices {
        assert_eq!(
            owner.read_holder(device).expect("record")["state"],
            json!("released")
        );
    }
}
