//! `artifact_upload`: store a firmware image under `artifacts.upload_directory` and answer its id,
//! `<sha256 hex><lowercased extension>`, so the same bytes and extension always give the same id.
//! The stored file is validated again by the ordinary rules before the id is handed out.

use super::args::Args;
use crate::ErrorType;
use crate::catalogue::ToolId;
use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::{Map, Value, json};

use super::{Acted, Context, Plan, Work};
use crate::artifacts::{self, ArtifactError, ArtifactPolicy, ArtifactRef, ArtifactRefusal, store};
use crate::envelope::Outcome;
use crate::policy::Action;

const TOOL: ToolId = ToolId::ArtifactUpload;

/// Padded standard base64; trailing bits are tolerated as the reference's pattern tolerates them.
const STRICT: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical)
        .with_decode_allow_trailing_bits(true),
);

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(ctx.tool, &[ToolId::ArtifactUpload])?;
    Ok(Plan {
        action: Action::ArtifactUpload {
            allow_upload: ctx.loaded.config.artifacts.allow_upload,
        },
        device: None,
        // Two uploads of the same bytes write the same name: one at a time.
        also: Vec::new(),
        resources: vec!["artifacts:upload".to_owned()],
        work: Work::Local(Box::new(move || Acted::local(upload(ctx)))),
    })
}

fn invalid(summary: &str) -> Outcome {
    Outcome::refused(TOOL, ErrorType::InvalidArgument, summary)
        .with_remediation([
            "Give image_path, or filename (a bare name like app.elf) with data_base64.",
        ])
        .not_contacted()
}

/// What an upload stores: the bytes and their digest, the name they came with, and where from.
struct Incoming {
    known: artifacts::Known,
    original_filename: String,
    source_path: Option<String>,
}

fn upload(ctx: &Context<'_>) -> Outcome {
    let policy = ArtifactPolicy::from_config(&ctx.loaded.config);
    let incoming = match incoming(ctx.args, &policy) {
        Ok(incoming) => incoming,
        Err(outcome) => return *outcome,
    };
    let extension = artifacts::extension_of(&incoming.original_filename);
    let id = format!("{}{extension}", incoming.known.sha256);
    if policy.validation().require_allowed_extension && !policy.extension_allowed(&extension) {
        let mut validation = Map::new();
        validation.insert("allowed_extension".into(), Value::Bool(false));
        return ArtifactRefusal {
            error: ArtifactError::Extension,
            validation: Value::Object(validation),
        }
        .to_outcome(TOOL.name())
        .with("artifact_id", id);
    }
    if let Err(refusal) = store::store(&policy, &id, &incoming.known.bytes) {
        return refusal.to_outcome(TOOL.name()).with("artifact_id", id);
    }
    // The stored file goes through the same gate as any image, so the id is only handed out for a
    // file that flash_firmware would accept. Its content is the bytes just written and synced, so
    // they are checked as they are, not read and hashed a second time.
    let checked = match artifacts::check_with(&policy, ArtifactRef::Id(&id), Some(incoming.known)) {
        Ok(checked) => checked,
        Err(refusal) => {
            store::remove(&policy, &id);
            return refusal.to_outcome(TOOL.name()).with("artifact_id", id);
        }
    };
    let validation = checked.validation();
    let mut artifact = match checked.report() {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    artifact.insert("artifact_id".into(), json!(id));
    artifact.insert(
        "original_filename".into(),
        json!(incoming.original_filename),
    );
    if let Some(source) = incoming.source_path {
        artifact.insert("source_path".into(), json!(source));
    }
    Outcome::ok(TOOL, "Firmware artifact uploaded and validated.")
        .with("artifact_id", id.clone())
        .with("artifact", Value::Object(artifact))
        .with("validation", validation)
        .with_next_step(format!(
            "Call flash_firmware with artifact_id \"{id}\" (or debug_start_session)."
        ))
}

fn incoming(args: &Value, policy: &ArtifactPolicy) -> Result<Incoming, Box<Outcome>> {
    if let Some(path) = args.arg_str("image_path") {
        // Validated like a flash, read once from one descriptor: the bytes stored are the bytes
        // that were checked (held in memory), so no private staging copy is needed.
        let checked = artifacts::check(policy, ArtifactRef::Path(path))
            .map_err(|r| Box::new(r.to_outcome(TOOL.name())))?;
        let original_filename = checked.file_name().to_owned();
        let source_path = Some(checked.display_path().to_owned());
        return Ok(Incoming {
            known: checked.into_known(),
            original_filename,
            source_path,
        });
    }
    let (Some(filename), Some(data)) = (args.arg_str("filename"), args.arg_str("data_base64"))
    else {
        return Err(Box::new(invalid(
            "Give image_path, or both filename and data_base64.",
        )));
    };
    let filename = filename.trim();
    if filename.is_empty()
        || filename.contains(['/', '\\'])
        || filename.contains("..")
        || filename.chars().any(char::is_control)
    {
        return Err(Box::new(invalid(
            "filename must not contain path separators or traversal segments.",
        )));
    }
    let compact: String = data.chars().filter(|c| !c.is_whitespace()).collect();
    // Refuse an oversized upload before decoding it: 4 characters carry 3 bytes.
    let estimate = u64::try_from(compact.len() / 4 * 3).unwrap_or(u64::MAX);
    if estimate > policy.max_bytes().saturating_add(2) {
        return Err(Box::new(too_large(estimate, policy.max_bytes())));
    }
    let bytes = STRICT.decode(compact.as_bytes()).map_err(|_| {
        Box::new(invalid(
            "data_base64 must contain valid padded base64 data.",
        ))
    })?;
    if bytes.is_empty() {
        return Err(Box::new(invalid("data_base64 decodes to no bytes.")));
    }
    let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if size > policy.max_bytes() {
        return Err(Box::new(too_large(size, policy.max_bytes())));
    }
    let sha256 = artifacts::sha256_hex(&bytes);
    Ok(Incoming {
        known: artifacts::Known { bytes, sha256 },
        original_filename: filename.to_owned(),
        source_path: None,
    })
}

fn too_large(bytes: u64, max_bytes: u64) -> Outcome {
    ArtifactRefusal {
        error: ArtifactError::TooLarge { bytes, max_bytes },
        validation: Value::Null,
    }
    .to_outcome(TOOL.name())
}
