//! A client of labgrid's coordinator (labgrid 26, gRPC): list places, acquire and release them as
//! one labgrid user, over one persistent connection.
//!
//! Nothing happens until the first request: [`Coordinator::new`] only records where and who. The
//! first request starts one thread (`labgrid-coordinator`) with its own single-threaded runtime,
//! which connects, opens the coordinator's `ClientStream` as our user and then serves requests in
//! order; the callers block on the answer with a deadline, as they do on the device locks, so the
//! claim stays synchronous and no caller's runtime has to outlive the connection. A connection
//! that fails is dropped and the next request connects again. Decision 0017.

mod grpc;
pub mod wire;

use std::sync::Mutex;
use std::sync::mpsc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc as channel;

pub use grpc::code;
pub use wire::{Place, Reservation};

/// How long connecting and the startup handshake may take.
const CONNECT_WITHIN: Duration = Duration::from_secs(3);
/// How long one call may take once connected.
const CALL_WITHIN: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// No answer: not listening, refused, dropped, or too slow. Nothing was acquired.
    #[error("the labgrid coordinator at {address} did not answer: {reason}")]
    Unreachable { address: String, reason: String },
    /// The coordinator answered the call with a gRPC error status.
    #[error("the labgrid coordinator refused {method}: {message} (gRPC status {code})")]
    Status {
        method: &'static str,
        code: u32,
        message: String,
    },
    #[error(transparent)]
    Malformed(#[from] wire::Malformed),
}

struct Job {
    method: &'static str,
    message: Bytes,
    reply: mpsc::SyncSender<Result<Bytes, Error>>,
}

/// The coordinator as one labgrid user sees it.
pub struct Coordinator {
    address: String,
    user: String,
    link: Mutex<Option<channel::UnboundedSender<Job>>>,
}

/// `<host>/agentic-hil`: the user name labgrid shows for this gate unless the configuration names one.
pub fn default_user() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("{host}/agentic-hil")
}

impl Coordinator {
    /// `address` is `host:port` (checked by the configuration); `user` is `host/user`. No I/O.
    pub fn new(address: impl Into<String>, user: impl Into<String>) -> Self {
        Self {
            address: address.into(),
            user: user.into(),
            link: Mutex::new(None),
        }
    }

    pub fn user(&self) -> &str {
        &self.user
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    /// Every place the coordinator knows.
    pub fn places(&self) -> Result<Vec<Place>, Error> {
        let answer = self.call("GetPlaces", Bytes::new())?;
        Ok(wire::places(&answer)?)
    }

    /// The place named `name`, if the coordinator knows it.
    pub fn place(&self, name: &str) -> Result<Option<Place>, Error> {
        Ok(self.places()?.into_iter().find(|p| p.name == name))
    }

    /// Every reservation.
    pub fn reservations(&self) -> Result<Vec<Reservation>, Error> {
        let answer = self.call("GetReservations", Bytes::new())?;
        Ok(wire::reservations(&answer)?)
    }

    /// Acquires `place` as our user; the coordinator refuses a place someone has acquired
    /// (`FAILED_PRECONDITION`) or one reserved for someone else (`PERMISSION_DENIED`).
    pub fn acquire(&self, place: &str) -> Result<(), Error> {
        self.call("AcquirePlace", wire::acquire(place)).map(drop)
    }

    /// Releases `place` if our user holds it, and only then.
    pub fn release(&self, place: &str) -> Result<(), Error> {
        self.call("ReleasePlace", wire::release(place, &self.user))
            .map(drop)
    }

    fn call(&self, method: &'static str, message: Bytes) -> Result<Bytes, Error> {
        let jobs = self.link()?;
        let (reply, answer) = mpsc::sync_channel(1);
        let unreachable = |reason: &str| Error::Unreachable {
            address: self.address.clone(),
            reason: reason.to_owned(),
        };
        if jobs
            .send(Job {
                method,
                message,
                reply,
            })
            .is_err()
        {
            self.forget();
            return Err(unreachable("the connection had closed"));
        }
        let answer = answer
            .recv_timeout(CALL_WITHIN + Duration::from_millis(500))
            .unwrap_or_else(|_| Err(unreachable("no answer in time")));
        if matches!(answer, Err(Error::Unreachable { .. })) {
            self.forget();
        }
        answer
    }

    fn forget(&self) {
        *self
            .link
            .lock()
            .expect("the link lock is never held across a panic") = None;
    }

    /// The open connection's request queue, connecting first if there is none.
    fn link(&self) -> Result<channel::UnboundedSender<Job>, Error> {
        let mut link = self
            .link
            .lock()
            .expect("the link lock is never held across a panic");
        if let Some(jobs) = link.as_ref().filter(|j| !j.is_closed()) {
            return Ok(jobs.clone());
        }
        let jobs = connect(&self.address, &self.user)?;
        *link = Some(jobs.clone());
        Ok(jobs)
    }
}

/// Starts the connection's thread and waits for its startup to be taken.
fn connect(address: &str, user: &str) -> Result<channel::UnboundedSender<Job>, Error> {
    let unreachable = |reason: String| Error::Unreachable {
        address: address.to_owned(),
        reason,
    };
    let (ready, started) = mpsc::sync_channel(1);
    let (jobs, mut queue) = channel::unbounded_channel::<Job>();
    let (address_owned, user) = (address.to_owned(), user.to_owned());
    std::thread::Builder::new()
        .name("labgrid-coordinator".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .enable_time()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => {
                    let _ = ready.send(Err(format!("no runtime: {e}")));
                    return;
                }
            };
            runtime.block_on(async move {
                let opened = tokio::time::timeout(
                    CONNECT_WITHIN,
                    grpc::Connection::open(&address_owned, &user),
                )
                .await;
                let connection = match opened {
                    Ok(Ok(connection)) => connection,
                    Ok(Err(e)) => {
                        let _ = ready.send(Err(match e {
                            Error::Unreachable { reason, .. } => reason,
                            other => other.to_string(),
                        }));
                        return;
                    }
                    Err(_) => {
                        let _ = ready.send(Err("no answer to the startup in time".into()));
                        return;
                    }
                };
                let _ = ready.send(Ok(()));
                // Ends when the coordinator handle is dropped (the queue closes) or the
                // connection fails (the queue is closed so the next request reconnects).
                while let Some(job) = queue.recv().await {
                    let answer = tokio::time::timeout(
                        CALL_WITHIN,
                        connection.unary(job.method, job.message),
                    )
                    .await
                    .unwrap_or_else(|_| {
                        Err(Error::Unreachable {
                            address: address_owned.clone(),
                            reason: "no answer in time".into(),
                        })
                    });
                    let failed = matches!(answer, Err(Error::Unreachable { .. }));
                    let _ = job.reply.send(answer);
                    if failed {
                        queue.close();
                        break;
                    }
                }
            });
        })
        .map_err(|e| unreachable(format!("no thread for the connection: {e}")))?;
    match started.recv_timeout(CONNECT_WITHIN + Duration::from_millis(500)) {
        Ok(Ok(())) => Ok(jobs),
        Ok(Err(reason)) => Err(unreachable(reason)),
        Err(_) => Err(unreachable("no answer to the startup in time".into())),
    }
}
