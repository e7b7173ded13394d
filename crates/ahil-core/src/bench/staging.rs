//! Stage 4½, between the claim and the act: the artifact a plan names is validated and copied into
//! private staging here, once, for every backend (the tools crate says how, in `Work::Staged`). The
//! work is built from the staged copy, so a backend cannot reach a driver with anything else, and a
//! refused artifact ends the call before any device is contacted (the refusal is then settled and
//! recorded like any other act).

use ahil_job::Contact;

use super::{Acted, Work};
use crate::ErrorType;
use crate::envelope::Outcome;

/// The work ready to act: staged work gets its artifact; other work is returned as it is.
pub(super) async fn ready<'a>(tool: &str, work: Work<'a>) -> Result<Work<'a>, Acted> {
    let Work::Staged(prepare) = work else {
        return Ok(work);
    };
    // Copying and hashing an image is file work: off the gate's async threads.
    match tokio::task::spawn_blocking(prepare).await {
        Ok(Ok(work)) => Ok(work),
        Ok(Err(refused)) => Err(*refused),
        Err(join_error) => Err(Acted {
            outcome: Outcome::refused(
                tool,
                ErrorType::ArtifactStagingFailed,
                format!("Staging the artifact failed unexpectedly: {join_error}."),
            ),
            contact: Some(Contact::none("staging runs before any device is opened")),
        }),
    }
}
