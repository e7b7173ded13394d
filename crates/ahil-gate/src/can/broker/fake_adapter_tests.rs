//! The broker over a fake [`Adapter`]: the trait the process bridge and SocketCAN implement, so what
//! holds here holds for a SocketCAN bus too (this kernel has no vcan to run one).

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ahil_config::{CanAdapter, CanBus, CanFilter, CanShare};
use ahil_drivers::can::{Adapter, CanError, Closed, Frame, Opened};
use indexmap::IndexMap;
use serde_json::{Map, Value, json};

use super::server::{Broker, Held};
use super::{AuditPlace, BrokerSpec, Rendezvous};
use crate::audit::Audit;
use crate::ownership::{DeviceLocks, LockRoot, Owner};

/// What the fake saw and what it will deliver; shared with the test.
#[derive(Default)]
struct Wire {
    sent: Vec<Frame>,
    incoming: VecDeque<Frame>,
    closed: bool,
}

struct FakeAdapter(Arc<Mutex<Wire>>);

impl FakeAdapter {
    fn wire(&self) -> std::sync::MutexGuard<'_, Wire> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Adapter for FakeAdapter {
    fn kind(&self) -> &'static str {
        "socketcan"
    }

    fn send(&self, frame: &Frame) -> Result<Map<String, Value>, CanError> {
        self.wire().sent.push(frame.clone());
        Ok(Map::new())
    }

    fn read(&self, max: usize, wait: Duration) -> Result<Vec<Frame>, CanError> {
        let mut wire = self.wire();
        if wire.incoming.is_empty() {
            drop(wire);
            std::thread::sleep(wait.min(Duration::from_millis(5)));
            return Ok(Vec::new());
        }
        let n = max.min(wire.incoming.len());
        Ok(wire.incoming.drain(..n).collect())
    }

    fn close(&self) -> Closed {
        self.wire().closed = true;
        Closed {
            safe_state_confirmed: true,
            process_reaped: true,
            report: Map::new(),
        }
    }
}

fn frame(id: u32, data: &[u8]) -> Frame {
    Frame::new(u64::from(id), false, false, data.to_vec()).expect("a classic frame")
}

fn share(filter: &[(u64, u64)], writes: bool) -> CanShare {
    let mut share = CanShare {
        filter: filter
            .iter()
            .map(|&(id, mask)| CanFilter {
                id,
                mask,
                extended: false,
            })
            .collect(),
        ..CanShare::default()
    };
    share.permissions.allow_write = writes;
    share
}

/// A broker over the fake on a bus with a writing `tester` (0x7E0–0x7EF) and a reading `monitor`
/// (0x100 and 0x7E0), its pump running.
fn broker(home: &Path, wire: &Arc<Mutex<Wire>>) -> Arc<Broker> {
    let broker = Arc::new(built(home, wire, None));
    std::thread::spawn({
        let broker = Arc::clone(&broker);
        move || broker.pump()
    });
    broker
}

/// The broker of [`broker`] for the bus `bus_key`, published at `home`'s rendezvous and serving
/// there on threads of this process, as the `can-broker` child would: a participant's attach from
/// `home` reaches it without starting a process (the session lifecycle's register step).
pub(crate) fn serving_in_process(home: &Path, bus_key: &str) {
    let broker = Arc::new(built(
        home,
        &Arc::new(Mutex::new(Wire::default())),
        Some(bus_key),
    ));
    Rendezvous::new(home, bus_key)
        .ensure()
        .expect("the broker directory");
    let listener = broker.publish().expect("the broker publishes its socket");
    std::thread::spawn(move || broker.serve(listener));
}

fn built(home: &Path, wire: &Arc<Mutex<Wire>>, bus_key: Option<&str>) -> Broker {
    let mut shares = IndexMap::new();
    shares.insert("tester".to_owned(), share(&[(0x7E0, 0x7F0)], true));
    shares.insert(
        "monitor".to_owned(),
        share(&[(0x100, 0x7FF), (0x7E0, 0x7FF)], false),
    );
    let mut bus = CanBus {
        adapter: CanAdapter::Socketcan,
        channel: "can0".into(),
        shares: Some(shares),
        ..CanBus::default()
    };
    bus.permissions.allow_write = true;
    let workspace = home.join("ws");
    std::fs::create_dir_all(&workspace).expect("workspace");
    let place = AuditPlace {
        state_root: home.join("state"),
        config_path: home.join("config.yaml"),
        workspace: workspace.clone(),
        reports_dir: ".agentic-hil/reports".into(),
        logs_dir: ".agentic-hil/logs".into(),
    };
    let spec = BrokerSpec {
        bus_id: "shared".into(),
        bus_key: bus_key.map_or_else(|| bus.lock_key(), str::to_owned),
        bus,
        bridge: None,
        kind: "socketcan".into(),
        config_version: 3,
        home: home.to_path_buf(),
        audit: place.clone(),
        first_attach_timeout_ms: 15_000,
    };
    let held = Held {
        place: Rendezvous::new(home, &spec.bus_key),
        locks: DeviceLocks::new(LockRoot::for_home(home), Owner::this_process("test")),
        audit: Audit::new(
            &place.state_root,
            &place.config_path,
            &workspace,
            &place.reports_dir,
            &place.logs_dir,
        ),
        log_name: "can-bus-test-shared.jsonl".into(),
    };
    let opened = Opened {
        backend: "fake".into(),
        listen_only_confirmed: false,
        report: Map::new(),
    };
    let adapter = FakeAdapter(Arc::clone(wire));
    Broker::over(spec, held, Box::new(adapter), &opened).0
}

fn read_until(broker: &Broker, participant: &str, id: u32) -> Vec<u64> {
    let message = json!({"max_frames": 16, "wait_ms": 1000, "until": [id]});
    let reply = broker.read(participant, message.as_object().expect("object"));
    reply["frames"]
        .as_array()
        .expect("frames")
        .iter()
        .map(|f| f["id"].as_u64().expect("an id"))
        .collect()
}

#[test]
fn the_broker_over_any_adapter_fans_frames_out_by_filter_and_closes_it_on_the_last_detach() {
    let home = std::env::temp_dir().join(format!("ahil-broker-fake-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).expect("home");
    let wire = Arc::new(Mutex::new(Wire::default()));
    let broker = broker(&home, &wire);
    broker.attach("tester").expect("tester attaches");
    broker.attach("monitor").expect("monitor attaches");

    {
        let mut w = wire.lock().unwrap_or_else(PoisonError::into_inner);
        w.incoming.push_back(frame(0x100, &[1]));
        w.incoming.push_back(frame(0x7E8, &[2]));
    }
    assert_eq!(read_until(&broker, "monitor", 0x100), vec![0x100]);
    assert_eq!(
        read_until(&broker, "tester", 0x7E8),
        vec![0x7E8],
        "the tester's filter keeps 0x100 out"
    );

    let sent = json!({"frame": frame(0x7E0, &[0x10, 0x01]).to_json()});
    let reply = broker.send("tester", sent.as_object().expect("object"));
    assert_eq!(reply["ok"], true, "{reply}");
    assert_eq!(
        wire.lock().unwrap_or_else(PoisonError::into_inner).sent,
        vec![frame(0x7E0, &[0x10, 0x01])],
        "the frame reached the adapter"
    );
    assert_eq!(
        read_until(&broker, "monitor", 0x7E0),
        vec![0x7E0],
        "the adapter does not echo a send; the broker delivers it to the others"
    );
    let refused = broker.send("monitor", sent.as_object().expect("object"));
    assert_eq!(refused["error_type"], "permission_denied", "{refused}");

    let (last, close) = broker.detach("monitor", "requested");
    assert!(
        !last && close.is_none(),
        "the adapter stays open for the tester"
    );
    assert!(!wire.lock().unwrap_or_else(PoisonError::into_inner).closed);
    let (last, close) = broker.detach("tester", "requested");
    assert!(last, "the tester was the last");
    assert_eq!(close.expect("a close result")["adapter_closed"], true);
    assert!(wire.lock().unwrap_or_else(PoisonError::into_inner).closed);
    let _ = std::fs::remove_dir_all(&home);
}
