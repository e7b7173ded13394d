use std::os::unix::fs::symlink;

use super::*;

fn port(device: impl AsRef<Path>) -> ComPort {
    ComPort {
        device: Some(device.as_ref().to_str().expect("utf-8").to_owned()),
        ..ComPort::default()
    }
}

/// Every key `port` is held under: its configured key and its host keys.
fn held(port: &ComPort, name: &str) -> Vec<String> {
    let mut keys = vec![port.lock_key(name)];
    keys.extend(port_host_keys(port, name, &Nodes::default()));
    keys
}

fn shared(a: &[String], b: &[String]) -> Vec<String> {
    a.iter().filter(|k| b.contains(k)).cloned().collect()
}

fn dir() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = fs::canonicalize(tmp.path()).expect("resolves");
    (tmp, root)
}

/// A device node `node` in `root` and a link `link` there naming it.
fn node_and_link(root: &Path, node: &str, link: &str) -> (PathBuf, PathBuf) {
    let (node, link) = (root.join(node), root.join(link));
    fs::write(&node, b"").expect("node");
    symlink(&node, &link).expect("link");
    (node, link)
}

fn assert_resolves(name: &Path, node: &Path) {
    assert_eq!(
        host_device_name(name.to_str().expect("utf-8")),
        node.display().to_string(),
        "{}",
        name.display()
    );
}

#[test]
fn a_link_and_the_node_it_names_share_the_node_key() {
    let (_tmp, root) = dir();
    let (node, link) = node_and_link(&root, "ttyACM0", "by-id-link");
    let by_link = port(&link);
    let by_node = port(&node);
    let node_key = format!("com:{}", node.display());
    assert_eq!(by_node.lock_key("b"), node_key, "the reference's own key");
    assert_eq!(
        shared(&held(&by_link, "a"), &held(&by_node, "b")),
        [node_key]
    );
    assert!(
        held(&by_link, "a").contains(&format!("com:{}", link.display())),
        "the configured spelling is still held, as the reference holds it"
    );
}

#[test]
fn a_chain_of_relative_links_resolves_to_the_node_the_kernel_opens() {
    let (_tmp, root) = dir();
    fs::create_dir_all(root.join("dev/pts")).expect("dirs");
    fs::create_dir_all(root.join("links/deeper")).expect("dirs");
    fs::write(root.join("dev/pts/7"), b"").expect("node");
    symlink("../../dev/pts/7", root.join("links/deeper/second")).expect("second");
    symlink("deeper/second", root.join("links/first")).expect("first");
    assert_resolves(&root.join("links/first"), &root.join("dev/pts/7"));
}

#[test]
fn a_link_whose_node_is_not_there_yet_resolves_as_far_as_it_goes() {
    let (_tmp, root) = dir();
    let link = root.join("replugged");
    symlink("gone/ttyUSB3", &link).expect("dangling link");
    // Python's non-strict realpath gives the same, so the reference locks the same name.
    assert_resolves(&link, &root.join("gone/ttyUSB3"));
}

#[test]
fn a_link_loop_is_taken_as_written_instead_of_hanging_the_claim() {
    let (_tmp, root) = dir();
    symlink(root.join("b"), root.join("a")).expect("a");
    symlink(root.join("a"), root.join("b")).expect("b");
    // Python's realpath stops where it meets the loop and gives this same name.
    assert_resolves(&root.join("a"), &root.join("a"));
}

#[test]
fn relative_names_and_url_handlers_are_left_as_written() {
    assert_eq!(
        host_device_name("socket://localhost:7000"),
        "socket://localhost:7000"
    );
    assert_eq!(host_device_name("ttyS0"), "ttyS0");
    assert!(port_host_keys(&port("socket://localhost:7000"), "u", &Nodes::default()).is_empty());
}

#[test]
fn two_spellings_of_one_character_device_share_its_device_number_key() {
    let (_tmp, root) = dir();
    let link = root.join("null-link");
    symlink("/dev/null", &link).expect("link");
    let keys = port_host_keys(&port(&link), "u", &Nodes::default());
    let meta = fs::metadata("/dev/null").expect("/dev/null");
    let number = format!(
        "com:char:{}:{}",
        libc::major(meta.rdev()),
        libc::minor(meta.rdev())
    );
    assert!(keys.contains(&number), "{keys:?}");
    assert!(held(&port("/dev/null"), "v").contains(&number));
}

#[test]
fn a_port_known_by_its_adapter_serial_still_collides_with_one_naming_its_device() {
    let (_tmp, root) = dir();
    let (node, link) = node_and_link(&root, "ttyACM1", "stlink-if02");
    let by_serial = ComPort {
        serial_number: Some("0669FF".into()),
        ..port(&link)
    };
    assert_eq!(by_serial.lock_key("a"), "com:serial:0669ff");
    let by_node = port(&node);
    assert!(!shared(&held(&by_serial, "a"), &held(&by_node, "b")).is_empty());
}

#[test]
fn an_unbound_port_has_no_host_keys() {
    assert!(port_host_keys(&ComPort::default(), "u", &Nodes::default()).is_empty());
}

#[test]
fn host_keys_follow_only_the_ports_a_claim_names() {
    let (_tmp, root) = dir();
    let (node, link) = node_and_link(&root, "ttyUSB0", "link");
    let mut config = Config::default();
    config.com_ports.insert("claimed".into(), port(&link));
    config
        .com_ports
        .insert("other".into(), port("/dev/ttyOther9"));
    let claimed = config.com_ports["claimed"].lock_key("claimed");
    assert_eq!(
        host_keys(&config, std::slice::from_ref(&claimed), &Nodes::default()),
        [format!("com:{}", node.display())]
    );
    assert!(host_keys(&config, &["probe:abc".to_owned()], &Nodes::default()).is_empty());
    assert_eq!(
        with_host_keys(&config, std::slice::from_ref(&claimed), &Nodes::default()),
        [claimed, format!("com:{}", node.display())]
    );
}

#[test]
fn a_claim_and_its_open_read_one_resolution_even_when_the_link_moves_in_between() {
    let (_tmp, root) = dir();
    let first = root.join("pts-5");
    let second = root.join("pts-9");
    fs::write(&first, b"").expect("first node");
    fs::write(&second, b"").expect("second node");
    let link = root.join("uart");
    symlink(&first, &link).expect("link");
    let mut config = Config::default();
    config.com_ports.insert("uart".into(), port(&link));
    let nodes = Nodes::resolve(&config);
    fs::remove_file(&link).expect("unlink");
    symlink(&second, &link).expect("the link now names another node");
    let device = link.to_str().expect("utf-8");
    assert_eq!(nodes.of(device), first.display().to_string());
    assert!(
        port_host_keys(&config.com_ports["uart"], "uart", &nodes)
            .contains(&format!("com:{}", first.display()))
    );
}
