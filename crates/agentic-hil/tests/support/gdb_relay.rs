//! A relay in place of the emulated board's gdb socket that holds gdb's packets at a chosen point,
//! so a test can cancel a call while it waits on the board.

/// A relay in place of the board's gdb socket. It passes everything, except that from the
/// `hold_from`-th packet of a connection that starts with one of `packets` on, it holds what gdb
/// sends until released (the chunk holding that packet is not passed before); once released, every
/// connection passes freely.
#[derive(Clone)]
pub struct GdbRelay {
    state: std::sync::Arc<(std::sync::Mutex<RelayState>, std::sync::Condvar)>,
    packets: &'static [&'static [u8]],
    hold_from: usize,
}

#[derive(Default)]
struct RelayState {
    holding: bool,
    released: bool,
}

impl GdbRelay {
    pub fn insert(
        socket: &std::path::Path,
        packets: &'static [&'static [u8]],
        hold_from: usize,
    ) -> Self {
        use std::os::unix::net::{UnixListener, UnixStream};
        let real = socket.with_file_name("gdb.real.sock");
        std::fs::rename(socket, &real).expect("the board's socket moves");
        let listener = UnixListener::bind(socket).expect("the relay listens");
        let relay = Self {
            state: std::sync::Arc::default(),
            packets,
            hold_from,
        };
        let shared = relay.clone();
        std::thread::spawn(move || {
            for gdb in listener.incoming().flatten() {
                let Ok(board) = UnixStream::connect(&real) else {
                    continue;
                };
                let (mut from_board, mut to_gdb) = (
                    board.try_clone().expect("clone"),
                    gdb.try_clone().expect("clone"),
                );
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from_board, &mut to_gdb);
                    let _ = to_gdb.shutdown(std::net::Shutdown::Both);
                });
                let relay = shared.clone();
                std::thread::spawn(move || relay.pass_gdb_to_board(gdb, board));
            }
        });
        relay
    }

    fn pass_gdb_to_board(
        &self,
        mut gdb: std::os::unix::net::UnixStream,
        mut board: std::os::unix::net::UnixStream,
    ) {
        use std::io::{Read, Write};
        let mut writes = 0;
        let mut buffer = [0u8; 4096];
        while let Ok(n) = gdb.read(&mut buffer) {
            if n == 0 {
                break;
            }
            let chunk = &buffer[..n];
            writes += self
                .packets
                .iter()
                .map(|packet| chunk.windows(packet.len()).filter(|w| w == packet).count())
                .sum::<usize>();
            if writes >= self.hold_from {
                self.hold();
            }
            if board.write_all(chunk).is_err() {
                break;
            }
        }
        let _ = board.shutdown(std::net::Shutdown::Both);
    }

    /// Blocks the connection's writes until [`Self::release`], once per relay.
    fn hold(&self) {
        let (lock, changed) = &*self.state;
        let mut state = lock.lock().expect("relay state");
        if state.released {
            return;
        }
        state.holding = true;
        changed.notify_all();
        while !state.released {
            state = changed.wait(state).expect("relay state");
        }
    }

    /// Blocks until a connection is held.
    pub fn wait_for_a_held_write(&self) {
        let (lock, changed) = &*self.state;
        let mut state = lock.lock().expect("relay state");
        while !state.holding {
            state = changed.wait(state).expect("relay state");
        }
    }

    pub fn release(&self) {
        let (lock, changed) = &*self.state;
        lock.lock().expect("relay state").released = true;
        changed.notify_all();
    }
}
