//! SocketCAN: a Linux CAN interface through a raw CAN socket. PEAK adapters on Linux are SocketCAN
//! interfaces too (the kernel's peak_usb / peak_pci drivers), so a `peak` bus on a netdev lands here.
//!
//! The interface is checked in the kernel's own link report before a socket is bound: a missing
//! interface, one that is not CAN, or one that is down is refused with no contact; a listen-only bus
//! needs `LISTEN-ONLY` in the controller's ctrlmode, and the report is read again after the open.
//! Bit timing is the interface's own (set with `ip link` by the operator); this adapter never sets it.

use std::io;
use std::sync::{PoisonError, RwLock};
use std::time::Duration;

use serde_json::{Map, Value, json};
use socketcan::{
    CanAnyFrame, CanDataFrame, CanFdFrame, CanFdSocket, CanFrame, CanRemoteFrame, CanSocket,
    EmbeddedFrame, ExtendedId, Id, Socket as _, SocketOptions as _, StandardId,
};

use super::link::{self, LinkState};
use super::{Adapter, CanError, Closed, Frame, OpenRequest, Opened};

enum Sock {
    Classic(CanSocket),
    Fd(CanFdSocket),
}

/// An open SocketCAN interface.
pub struct SocketCan {
    /// Read-locked by send and read (one raw socket serves both at once), write-locked by close.
    socket: RwLock<Option<Sock>>,
    brs: bool,
}

impl SocketCan {
    /// Check the interface in the kernel's report, then bind a socket to it.
    pub fn open(request: &OpenRequest) -> Result<(Self, Opened), CanError> {
        let ip = link::ip_executable();
        let before = match &ip {
            Some(ip) => Some(check_link(&link::read(ip, &request.channel)?, request)?),
            None if request.listen_only => {
                return Err(CanError::ListenOnlyUnsupported(
                    "Listen-only cannot be proven: no `ip` at a fixed system path to read the kernel's link report.".into(),
                    json!({"interface": request.channel}),
                ));
            }
            None => None,
        };
        let socket = open_socket(&request.channel, request.fd)?;
        let set_own = match &socket {
            Sock::Classic(s) => s.set_recv_own_msgs(request.receive_own_messages),
            Sock::Fd(s) => s.set_recv_own_msgs(request.receive_own_messages),
        };
        set_own.map_err(|e| CanError::OpenFailed(e.to_string()))?;
        let mut report = Map::new();
        report.insert("ok".into(), true.into());
        report.insert("interface".into(), request.channel.clone().into());
        if let Some(state) = &before {
            report.insert("link_state".into(), state.to_json());
        }
        if request.listen_only {
            // The mode could have been switched between the check and the bind: read it again.
            let after = ip.as_deref().map(|ip| link::read(ip, &request.channel));
            if !matches!(&after, Some(Ok(state)) if state.listen_only()) {
                drop(socket);
                return Err(CanError::ListenOnlyUnconfirmed(format!(
                    "The kernel no longer reports `{}` as listen-only after the socket was bound; it was closed again.",
                    request.channel
                )));
            }
        }
        Ok((
            Self {
                socket: RwLock::new(Some(socket)),
                brs: request.data_bitrate.is_some(),
            },
            Opened {
                backend: "socketcan".into(),
                listen_only_confirmed: request.listen_only,
                report,
            },
        ))
    }
}

/// Refuse, before any socket exists, an interface that cannot carry this session.
pub fn check_link(state: &LinkState, request: &OpenRequest) -> Result<LinkState, CanError> {
    if !state.up {
        return Err(CanError::InterfaceDown(format!(
            "`{}` is down; the operator brings it up with `ip link set {} up type can bitrate …`.",
            state.name, state.name
        )));
    }
    // Silence is the first question on a listen-only bus: an interface that cannot prove it is
    // refused as such, whatever else is wrong with it.
    if request.listen_only && !state.listen_only() {
        return Err(CanError::ListenOnlyUnsupported(
            format!(
                "The kernel does not report `{}` as listen-only, so silence on the bus cannot be proven.",
                state.name
            ),
            state.to_json(),
        ));
    }
    if !state.is_can() {
        return Err(CanError::InterfaceNotFound(format!(
            "`{}` is not a CAN interface (the kernel reports kind {}).",
            state.name,
            state.kind.as_deref().unwrap_or("none")
        )));
    }
    Ok(state.clone())
}

/// Bind a raw CAN socket (FD frames enabled on an FD bus).
fn open_socket(channel: &str, fd: bool) -> Result<Sock, CanError> {
    let opened = if fd {
        CanFdSocket::open(channel).map(Sock::Fd)
    } else {
        CanSocket::open(channel).map(Sock::Classic)
    };
    opened.map_err(|e| open_error(channel, &e))
}

fn open_error(channel: &str, error: &io::Error) -> CanError {
    match error.raw_os_error() {
        Some(libc::ENODEV) => {
            CanError::InterfaceNotFound(format!("The kernel has no network interface `{channel}`."))
        }
        Some(libc::EAFNOSUPPORT | libc::EPROTONOSUPPORT) => CanError::BackendNotAvailable(
            "This kernel has no SocketCAN support (AF_CAN sockets are refused).".into(),
        ),
        _ => CanError::OpenFailed(format!("{channel}: {error}")),
    }
}

fn to_id(frame: &Frame) -> Option<Id> {
    if frame.extended {
        ExtendedId::new(frame.id).map(Id::Extended)
    } else {
        u16::try_from(frame.id)
            .ok()
            .and_then(StandardId::new)
            .map(Id::Standard)
    }
}

fn from_parts(id: Id, rtr: bool, data: &[u8]) -> Option<Frame> {
    let (raw, extended) = match id {
        Id::Standard(s) => (u64::from(s.as_raw()), false),
        Id::Extended(e) => (u64::from(e.as_raw()), true),
    };
    Frame::new(raw, extended, rtr, data.to_vec()).ok()
}

fn from_any(frame: &CanAnyFrame) -> Option<Frame> {
    match frame {
        CanAnyFrame::Normal(f) => from_parts(f.id(), false, f.data()),
        CanAnyFrame::Remote(f) => from_parts(f.id(), true, &[]),
        CanAnyFrame::Fd(f) => from_parts(f.id(), false, f.data()),
        // Error frames are the controller's reports, not bus traffic.
        CanAnyFrame::Error(_) => None,
    }
}

fn from_classic(frame: &CanFrame) -> Option<Frame> {
    match frame {
        CanFrame::Data(f) => from_parts(f.id(), false, f.data()),
        CanFrame::Remote(f) => from_parts(f.id(), true, &[]),
        CanFrame::Error(_) => None,
    }
}

fn timed_out(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

impl Adapter for SocketCan {
    fn kind(&self) -> &'static str {
        "socketcan"
    }

    fn send(&self, frame: &Frame) -> Result<Map<String, Value>, CanError> {
        let id =
            to_id(frame).ok_or_else(|| CanError::SendFailed("identifier out of range".into()))?;
        let bad = || CanError::SendFailed("the frame does not fit this socket".into());
        let socket = self.socket.read().unwrap_or_else(PoisonError::into_inner);
        let written = match socket.as_ref() {
            None => return Err(CanError::SendFailed("the socket is closed".into())),
            Some(Sock::Classic(s)) if frame.rtr => {
                s.write_frame(&CanRemoteFrame::new_remote(id, frame.data.len()).ok_or_else(bad)?)
            }
            Some(Sock::Classic(s)) => {
                s.write_frame(&CanDataFrame::new(id, &frame.data).ok_or_else(bad)?)
            }
            Some(Sock::Fd(s)) => {
                let mut fd = CanFdFrame::new(id, &frame.data).ok_or_else(bad)?;
                fd.set_brs(self.brs);
                s.write_frame(&fd)
            }
        };
        written.map_err(|e| CanError::SendFailed(e.to_string()))?;
        let mut result = Map::new();
        result.insert("ok".into(), true.into());
        Ok(result)
    }

    fn read(&self, max: usize, wait: Duration) -> Result<Vec<Frame>, CanError> {
        let socket = self.socket.read().unwrap_or_else(PoisonError::into_inner);
        let mut frames = Vec::new();
        let mut timeout = wait;
        while frames.len() < max {
            let got = match socket.as_ref() {
                None => return Err(CanError::ReadFailed("the socket is closed".into())),
                Some(Sock::Classic(s)) => s.read_frame_timeout(timeout).map(|f| from_classic(&f)),
                Some(Sock::Fd(s)) => s.read_frame_timeout(timeout).map(|f| from_any(&f)),
            };
            match got {
                Ok(Some(frame)) => frames.push(frame),
                Ok(None) => {}
                Err(error) if timed_out(&error) => break,
                Err(error) => return Err(CanError::ReadFailed(error.to_string())),
            }
            // Only the first frame is waited for; the rest are what is already queued.
            timeout = Duration::ZERO;
        }
        Ok(frames)
    }

    fn close(&self) -> Closed {
        // Closing the socket takes this process off the interface; the controller stays as the
        // operator configured it, which is the safe state for a socket user.
        *self.socket.write().unwrap_or_else(PoisonError::into_inner) = None;
        Closed {
            safe_state_confirmed: true,
            process_reaped: true,
            report: Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(listen_only: bool) -> OpenRequest {
        OpenRequest::classic("can0", listen_only, Duration::from_secs(1))
    }

    fn state(kind: &str, up: bool, ctrlmode: &[&str]) -> LinkState {
        LinkState {
            name: "can0".into(),
            kind: Some(kind.into()),
            up,
            operstate: None,
            ctrlmode: ctrlmode.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn a_down_interface_is_refused_before_any_socket() {
        let error = check_link(&state("can", false, &[]), &request(false)).expect_err("down");
        assert_eq!(error.error_type(), "can_interface_down");
        assert!(matches!(error.contact(), crate::Contact::None { .. }));
    }

    #[test]
    fn a_listen_only_bus_needs_the_controller_mode_in_the_kernel_report() {
        let error = check_link(&state("can", true, &["FD"]), &request(true)).expect_err("refused");
        assert_eq!(error.error_type(), "can_listen_only_unsupported");
        assert!(check_link(&state("can", true, &["LISTEN-ONLY"]), &request(true)).is_ok());
        let virtual_bus = check_link(&state("vcan", true, &["LISTEN-ONLY"]), &request(true));
        assert!(
            virtual_bus.is_err(),
            "a virtual bus has no controller to be silent"
        );
    }

    #[test]
    fn a_network_interface_that_is_not_can_is_refused() {
        let error = check_link(&state("veth", true, &[]), &request(false)).expect_err("refused");
        assert_eq!(error.error_type(), "can_interface_not_found");
    }

    #[test]
    fn socket_errors_map_to_the_public_vocabulary() {
        let enodev = io::Error::from_raw_os_error(libc::ENODEV);
        assert_eq!(
            open_error("can0", &enodev).error_type(),
            "can_interface_not_found"
        );
        let no_af = io::Error::from_raw_os_error(libc::EAFNOSUPPORT);
        assert_eq!(
            open_error("can0", &no_af).error_type(),
            "can_backend_not_available"
        );
        let other = io::Error::from_raw_os_error(libc::EPERM);
        assert_eq!(
            open_error("can0", &other).error_type(),
            "can_adapter_open_failed"
        );
    }

    /// Binds a real socket on this kernel: without AF_CAN it is refused as unavailable, with it a
    /// missing interface is ENODEV; both are refusals before contact.
    #[test]
    fn binding_a_missing_interface_on_this_kernel_is_refused_before_contact() {
        for fd in [false, true] {
            let error = open_socket("ahilnone0", fd).err().expect("cannot bind");
            assert!(
                matches!(
                    error.error_type(),
                    "can_backend_not_available" | "can_interface_not_found"
                ),
                "{error}"
            );
            assert!(matches!(error.contact(), crate::Contact::None { .. }));
        }
    }

    /// Removes the test's vcan interface whatever the test did.
    struct VcanGuard(std::path::PathBuf, String);

    impl Drop for VcanGuard {
        fn drop(&mut self) {
            let _ = std::process::Command::new(&self.0)
                .args(["link", "delete", "dev", &self.1])
                .output();
        }
    }

    /// A real SocketCAN round trip, on a kernel with vcan and as root (docs/CAN.md records which
    /// parts ran where). Run it with `cargo test -p ahil-drivers -- --ignored vcan`.
    #[test]
    #[ignore = "needs a kernel with the vcan module and root (AF_CAN), which this kind of machine lacks"]
    fn vcan_round_trip_on_this_kernel() {
        let ip = link::ip_executable().expect("no `ip` at a fixed path: install iproute2");
        let name = format!("ahilv{}", std::process::id() % 100_000);
        let added = std::process::Command::new(&ip)
            .args(["link", "add", "dev", &name, "type", "vcan"])
            .output()
            .expect("ip runs");
        assert!(
            added.status.success(),
            "no vcan link could be added (needs the vcan module and root): {}",
            String::from_utf8_lossy(&added.stderr).trim()
        );
        let _guard = VcanGuard(ip.clone(), name.clone());
        let up = std::process::Command::new(&ip)
            .args(["link", "set", "dev", &name, "mtu", "72", "up"])
            .output()
            .expect("ip runs");
        assert!(up.status.success(), "the vcan comes up");
        for fd in [false, true] {
            let mut req = request(false);
            req.channel.clone_from(&name);
            req.fd = fd;
            req.receive_own_messages = true;
            let (adapter, opened) = SocketCan::open(&req).expect("the vcan opens");
            assert_eq!(opened.backend, "socketcan");
            let data = if fd { vec![7; 12] } else { vec![1, 2, 3] };
            let frame = Frame::new(0x123, false, false, data).expect("valid");
            adapter.send(&frame).expect("the frame is taken");
            let back = adapter.read(4, Duration::from_secs(2)).expect("read");
            assert_eq!(back, vec![frame]);
            assert!(adapter.close().safe_state_confirmed);
        }
        let mut listen = request(true);
        listen.channel.clone_from(&name);
        let error = SocketCan::open(&listen)
            .err()
            .expect("a vcan has no listen-only controller");
        assert_eq!(error.error_type(), "can_listen_only_unsupported");
    }

    #[test]
    fn frames_convert_both_ways_with_their_identifier_width() {
        let frame = Frame::new(0x1234_5678, true, false, vec![1, 2]).expect("valid");
        let id = to_id(&frame).expect("fits");
        assert_eq!(from_parts(id, false, &frame.data), Some(frame));
        let short = Frame::new(0x7ff, false, true, vec![]).expect("valid");
        assert_eq!(
            from_parts(to_id(&short).expect("fits"), true, &[]),
            Some(short)
        );
    }
}
