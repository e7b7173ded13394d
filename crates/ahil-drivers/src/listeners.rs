//! What a process group listens on, read from `/proc`: a debug server must be reachable from this
//! machine only, and some (ST-LINK_gdbserver) take no option that says so, so the server is checked
//! once its port is open rather than trusted.

use std::collections::HashSet;
use std::fs;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The TCP sockets group `pgid` listens on with an address other than loopback (`0.0.0.0`, `::`,
/// a LAN address). Empty when all are loopback, or when `/proc` cannot tell.
pub fn exposed(pgid: i32) -> Vec<SocketAddr> {
    let inodes: HashSet<u64> = crate::process::group_members(pgid)
        .unwrap_or_default()
        .into_iter()
        .flat_map(socket_inodes)
        .collect();
    if inodes.is_empty() {
        return Vec::new();
    }
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| fs::read_to_string(table).ok())
        .flat_map(|text| listening(&text))
        .filter(|(address, inode)| inodes.contains(inode) && !is_loopback(address.ip()))
        .map(|(address, _)| address)
        .collect()
}

fn socket_inodes(pid: i32) -> Vec<u64> {
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.flatten()
        .filter_map(|fd| fs::read_link(fd.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy().into_owned();
            target
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect()
}

/// The LISTEN rows of a `/proc/net/tcp` or `tcp6` table: (local address, socket inode).
fn listening(table: &str) -> Vec<(SocketAddr, u64)> {
    const LISTEN: &str = "0A";
    table
        .lines()
        .skip(1)
        .filter_map(|row| {
            let fields: Vec<&str> = row.split_whitespace().collect();
            if fields.get(3) != Some(&LISTEN) {
                return None;
            }
            let address = parse_address(fields.get(1)?)?;
            let inode = fields.get(9)?.parse().ok()?;
            Some((address, inode))
        })
        .collect()
}

/// `0100007F:1F90` or a 32-digit IPv6 form: the kernel prints each 32-bit word of the address, as
/// stored (network order), in this machine's byte order, then the port in hex.
fn parse_address(field: &str) -> Option<SocketAddr> {
    let (ip, port) = field.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let mut bytes = Vec::with_capacity(16);
    for word in ip.as_bytes().chunks(8) {
        let word = u32::from_str_radix(std::str::from_utf8(word).ok()?, 16).ok()?;
        bytes.extend_from_slice(&word.to_ne_bytes());
    }
    let ip = match bytes.len() {
        4 => IpAddr::V4(Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3])),
        16 => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(bytes).ok()?)),
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_rows_parse_into_addresses_in_this_machines_byte_order() {
        let loopback = format!("{:08X}:1F90", u32::from_ne_bytes([127, 0, 0, 1]));
        assert_eq!(
            parse_address(&loopback),
            Some(SocketAddr::from(([127, 0, 0, 1], 8080)))
        );
        assert_eq!(
            parse_address("00000000:0016"),
            Some(SocketAddr::from(([0, 0, 0, 0], 22)))
        );
        let v6_loopback = format!(
            "{:08X}{:08X}{:08X}{:08X}:0050",
            0,
            0,
            0,
            u32::from_ne_bytes([0, 0, 0, 1])
        );
        assert_eq!(
            parse_address(&v6_loopback),
            Some(SocketAddr::from((Ipv6Addr::LOCALHOST, 80)))
        );
        assert_eq!(parse_address("zz:0050"), None);
        assert_eq!(parse_address("0100007F"), None);
    }

    #[test]
    fn only_listen_rows_are_read() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   \
            0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0 100 0 0 10 0\n   \
            1: 00000000:9C40 0100007F:0016 01 00000000:00000000 00:00000000 00000000     0        0 222 1 0 100 0 0 10 0\n";
        assert_eq!(
            listening(table),
            vec![(SocketAddr::from(([0, 0, 0, 0], 22)), 111)]
        );
    }

    /// A child of its own group listening on `host`; answers the child and its pid.
    fn listener_in_own_group(host: &str) -> std::process::Child {
        use std::os::unix::process::CommandExt as _;
        let script = format!(
            "import socket, time\ns = socket.socket()\ns.bind(('{host}', 0))\ns.listen(1)\nprint(s.getsockname()[1], flush=True)\ntime.sleep(30)\n"
        );
        std::process::Command::new("python3")
            .args(["-c", &script])
            .stdout(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("python3 starts")
    }

    fn wait_for_port(child: &mut std::process::Child) {
        use std::io::BufRead as _;
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.as_mut().expect("stdout"))
            .read_line(&mut line)
            .expect("the port is printed");
        assert!(line.trim().parse::<u16>().is_ok(), "{line}");
    }

    #[test]
    fn a_group_listening_on_every_interface_is_exposed_and_one_on_loopback_is_not() {
        let mut wide = listener_in_own_group("0.0.0.0");
        let mut local = listener_in_own_group("127.0.0.1");
        wait_for_port(&mut wide);
        wait_for_port(&mut local);
        let wide_pgid = i32::try_from(wide.id()).expect("pid");
        let local_pgid = i32::try_from(local.id()).expect("pid");

        let exposed_wide = exposed(wide_pgid);
        let exposed_local = exposed(local_pgid);
        for child in [&mut wide, &mut local] {
            let _ = child.kill();
            let _ = child.wait();
        }
        assert_eq!(exposed_wide.len(), 1, "{exposed_wide:?}");
        assert!(exposed_wide[0].ip().is_unspecified(), "{exposed_wide:?}");
        assert_eq!(exposed_local, Vec::<SocketAddr>::new());
    }

    #[test]
    fn this_process_group_members_include_a_child_of_its_own_group() {
        let mut child = listener_in_own_group("127.0.0.1");
        wait_for_port(&mut child);
        let pid = i32::try_from(child.id()).expect("pid");
        let members = crate::process::group_members(pid).expect("/proc is readable");
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(members, vec![pid]);
    }
}
