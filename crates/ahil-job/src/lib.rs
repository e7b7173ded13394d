//! `ahil-job`: the contract of one job on a device, shared by the gate core and the drivers. What
//! the job can prove about contact with the target, the flag that cancels it, and where it reports
//! the stages it reaches. The core runs jobs with these and names no driver (decision 0010).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What the driver can prove about contact with the target when an operation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Contact {
    /// The operation provably never reached the target. `proof` names the backend's own evidence (for
    /// example "the version check only runs `--version`"), so a reviewer can see why retrying is safe.
    None {
        /// The backend's evidence that nothing reached the board.
        proof: String,
    },
    /// The operation may have reached the target; nothing proves either way.
    Possible,
    /// The operation certainly reached the target.
    Made,
}

impl Contact {
    /// Shorthand for a proof of no contact.
    pub fn none(proof: impl Into<String>) -> Self {
        Self::None {
            proof: proof.into(),
        }
    }
}

/// A shared flag that cancels a running command. Cloning shares the flag.
#[derive(Debug, Clone, Default)]
pub struct CancelFlag(Arc<AtomicBool>);

impl CancelFlag {
    /// Raise the flag.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether the flag is raised.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// A guard that raises the flag when dropped, so an abandoned async call kills its child.
    pub fn guard(&self) -> CancelOnDrop {
        CancelOnDrop(self.clone())
    }
}

/// Raises its [`CancelFlag`] on drop.
#[derive(Debug)]
pub struct CancelOnDrop(CancelFlag);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// A progress callback: the stage a long action has reached (`connect`, `download`, `verify`, `reset`).
pub type Progress = Arc<dyn Fn(&str) + Send + Sync>;

thread_local! {
    static STAGE_SINK: std::cell::RefCell<Option<Progress>> = const { std::cell::RefCell::new(None) };
}

/// Runs `work` with `sink` receiving the stages of every budget on this thread that has no callback
/// of its own. The gate runs each driver call this way, so every backend's stages reach the caller
/// without each call site threading a callback through.
pub fn with_stage_sink<T>(sink: Progress, work: impl FnOnce() -> T) -> T {
    struct Restore(Option<Progress>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            STAGE_SINK.with(|sink| *sink.borrow_mut() = previous);
        }
    }
    let previous = STAGE_SINK.with(|slot| slot.borrow_mut().replace(sink));
    let _restore = Restore(previous);
    work()
}

/// The stage sink this thread runs under, if any ([`with_stage_sink`]).
pub fn stage_sink() -> Option<Progress> {
    STAGE_SINK.with(|sink| sink.borrow().clone())
}
