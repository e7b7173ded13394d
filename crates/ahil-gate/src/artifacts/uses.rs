//! The artifact a call names, as its plan carries it: the pipeline validates and stages it once,
//! after the claim and before the act, for every backend (`bench::staging`). No backend stages.

use ahil_drivers::Contact;
use serde_json::Value;

use super::{ArtifactPolicy, ArtifactRef, Format, StagedArtifact, Stager};
use crate::ErrorType;
use crate::actions::Acted;
use crate::catalogue::ToolId;
use crate::envelope::Outcome;

/// Where the artifact comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArtifactSource {
    /// `image_path`: workspace-relative, inside the allowed roots.
    Path(String),
    /// `artifact_id`: an earlier `artifact_upload` (policy allows the store in the plan).
    Id(String),
}

/// What the call does with it, which decides the formats it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Written to the board: ELF, HEX or BIN.
    FlashImage,
    /// Loaded by gdb for a debug session: an ELF with its symbols.
    DebugElf,
}

/// The artifact a plan names.
#[derive(Debug, Clone)]
pub struct ArtifactUse {
    pub tool: ToolId,
    pub source: ArtifactSource,
    pub purpose: Purpose,
    pub policy: ArtifactPolicy,
}

impl ArtifactUse {
    /// The artifact `args` names (`image_path` or `artifact_id`, exactly one), or the refusal.
    pub fn from_args(
        tool: ToolId,
        args: &Value,
        purpose: Purpose,
        policy: ArtifactPolicy,
    ) -> Result<Self, Box<Outcome>> {
        let source = match (
            args.get("image_path").and_then(Value::as_str),
            args.get("artifact_id").and_then(Value::as_str),
        ) {
            (Some(path), None) => ArtifactSource::Path(path.to_owned()),
            (None, Some(id)) => ArtifactSource::Id(id.to_owned()),
            _ => {
                return Err(crate::actions::probe::invalid(
                    tool,
                    "Give exactly one of image_path or artifact_id.",
                ));
            }
        };
        Ok(Self {
            tool,
            source,
            purpose,
            policy,
        })
    }

    /// Resolve, validate, copy into private staging and check the format its purpose takes. A
    /// refusal is work that touched nothing: no device was opened yet.
    pub fn stage(&self) -> Result<StagedArtifact, Box<Acted>> {
        let refused = |outcome: Outcome| {
            Box::new(Acted {
                outcome,
                contact: Some(Contact::none(
                    "the artifact was refused before anything connected to the board",
                )),
            })
        };
        let request = match &self.source {
            ArtifactSource::Path(path) => ArtifactRef::Path(path),
            ArtifactSource::Id(id) => ArtifactRef::Id(id),
        };
        let staged = Stager::process()
            .and_then(|stager| super::resolve(&self.policy, stager, request))
            .map_err(|refusal| refused(refusal.to_outcome(self.tool.name())))?;
        let summary = match (self.purpose, staged.format()) {
            (Purpose::FlashImage, Some(_)) | (Purpose::DebugElf, Some(Format::Elf)) => {
                return Ok(staged);
            }
            (Purpose::FlashImage, None) => {
                "The image is not an ELF, HEX or BIN, so the board cannot load it."
            }
            (Purpose::DebugElf, _) => "Debug sessions require an ELF artifact with debug symbols.",
        };
        Err(refused(
            Outcome::refused(self.tool, ErrorType::ArtifactValidationFailed, summary)
                .with("artifact", staged.report().clone()),
        ))
    }
}
