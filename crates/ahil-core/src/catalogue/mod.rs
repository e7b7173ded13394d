//! The tool catalogue: one [`Declaration`] per tool is the single source of what the gate knows about
//! it: name, schema, annotations, description, availability and its gate classes (audit, lease,
//! containment, session, incident reasons, status). Its plan is bound in the tools crate
//! (`ahil-gate`'s `actions::dispatch`), by an exhaustive match on [`ToolId`], so the core names no
//! tool implementation (decision 0010).
//!
//! `tools/list`, dispatch, audit, leases, incidents and the always-status set are all derived from
//! the declarations, so a tool cannot be listed under one name and gated under another. Adding a
//! tool is one [`ToolId`] variant and one declaration in a group file (decision 0009).

use std::fmt;
use std::str::FromStr;

use serde_json::{Value, json};

use crate::envelope::{Outcome, overall_success, overall_success_value};

mod debugger;
mod devices;
mod operator;
mod rtt;
mod schemas;
mod setup;

pub use schemas::MAX_READ_BYTES;

/// One tool as the MCP surface lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub title: String,
    pub description: String,
    /// A flat JSON schema (no `$ref`), `additionalProperties: false`.
    pub input_schema: Value,
    /// The JSON schema of the tool's `structuredContent` (see `catalogue_output`).
    pub output_schema: Value,
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

impl ToolSpec {
    /// The MCP `annotations` object: read-only tools carry only `readOnlyHint` and `openWorldHint`
    /// (the other two hints mean nothing for a tool that changes nothing).
    pub fn annotations(&self) -> Value {
        if self.read_only {
            json!({"title": self.title, "readOnlyHint": true, "openWorldHint": self.open_world})
        } else {
            json!({
                "title": self.title,
                "readOnlyHint": false,
                "destructiveHint": self.destructive,
                "idempotentHint": self.idempotent,
                "openWorldHint": self.open_world,
            })
        }
    }

    /// The tool as one `tools/list` entry.
    pub fn to_mcp_value(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "annotations": self.annotations(),
        })
    }
}

/// When a tool is listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Availability {
    /// With or without a configuration (an unprovisioned server answers `config_file_not_found`).
    Always,
    /// Only through the operator's CLI: never listed, and unknown to an MCP server.
    Operator,
}

/// How a tool changes the world.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// Reads only.
    ReadOnly,
    /// Changes something: (destructive, idempotent).
    Effect { destructive: bool, idempotent: bool },
}

/// The four effects by name, as the MCP hints mean them (`destructive: false` is an additive update).
impl Kind {
    const IDEMPOTENT: Self = Self::effect(false, true);
    const ADDITIVE: Self = Self::effect(false, false);
    const DESTRUCTIVE: Self = Self::effect(true, false);
    const DESTRUCTIVE_IDEMPOTENT: Self = Self::effect(true, true);

    const fn effect(destructive: bool, idempotent: bool) -> Self {
        Self::Effect {
            destructive,
            idempotent,
        }
    }
}

/// A tool's identity. Its name lives only in its declaration: [`ToolId::name`] and [`FromStr`]
/// both go through the declarations, so a name that is not declared parses to no tool at all.
/// Variants are in `tools/list` order (a test holds the declarations to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ToolId {
    DebuggerInfo,
    ProjectConfigDescribe,
    ProjectConfigCreate,
    ProjectConfigSet,
    ProjectConfigAdoptHardware,
    ProjectConfigReloadDescription,
    ArtifactUpload,
    BenchRunStart,
    BenchRunStop,
    BenchRunStatus,
    DebuggerProbesList,
    ProbeTarget,
    FlashFirmware,
    ResetTarget,
    DebugStartSession,
    DebugStopSession,
    DebugGetSessionStatus,
    DebugSetBreakpoint,
    DebugListBreakpoints,
    DebugClearBreakpoints,
    DebugContinue,
    DebugHalt,
    DebugGetStopReason,
    DebugSymbolInfo,
    DebugSymbolValue,
    DebugDumpSymbolIhex,
    GetLastReport,
    ClassifyLastError,
    HardwareLeaseStatus,
    HardwareRecover,
    ServerUpgrade,
    ComPortsList,
    ComSessionStart,
    ComSessionStop,
    ComWrite,
    ComRead,
    CanBusesList,
    CanSessionStart,
    CanSessionStop,
    CanSend,
    CanRead,
    PowerSupplyStatus,
    PowerSupplySet,
    PowerSupplyOutput,
    PowerSupplyCycle,
    TestReactorRun,
    TestReactorStatus,
    TestReactorStop,
    RttChannelsList,
    RttSessionStart,
    RttSessionStop,
    RttWrite,
    RttRead,
    SimStart,
    SimStop,
    SimStatus,
    AdoptHardware,
    DebuggerProbesBootstrap,
    Doctor,
}

impl ToolId {
    /// The declaration of this tool.
    pub fn declaration(self) -> &'static Declaration {
        declarations()
            .find(|d| d.id == self)
            .expect("every ToolId has a declaration (declarations_cover_every_tool_id_in_order)")
    }

    /// The tool's public name.
    pub fn name(self) -> &'static str {
        self.declaration().name
    }

    /// How the gate treats calls of this tool.
    pub fn gate(self) -> Gate {
        self.declaration().gate
    }
}

/// A name that no declaration carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownTool;

impl FromStr for ToolId {
    type Err = UnknownTool;

    fn from_str(name: &str) -> Result<Self, UnknownTool> {
        declarations()
            .find(|d| d.name == name)
            .map(|d| d.id)
            .ok_or(UnknownTool)
    }
}

impl fmt::Display for ToolId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl AsRef<str> for ToolId {
    fn as_ref(&self) -> &str {
        self.name()
    }
}

/// How a call takes this configuration's lease (see `bench/leases.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    /// A lease for the call only.
    Call,
    /// A session start: on success the lease is kept for the session.
    SessionStart,
    /// A session stop: it ends the session's kept lease too, and is let through a standing
    /// incident because it brings a device back to rest.
    SessionStop,
    /// Brings a device back to rest (halt, clear breakpoints): let through a standing incident,
    /// never clearing it.
    Containment,
    /// Ending a run (decision 0002): it settles an incident open on the bench, is let through a
    /// standing one, and goes on without a lease when another process holds the bench for a
    /// moment, because ending this server's own run must never be refused.
    RunEnd,
}

/// The gate's classes for one tool: what the pipeline does around its plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    /// Every call leaves a report, and an audit that cannot be written refuses the call first.
    pub audited: bool,
    /// `None`: the call takes no lease.
    pub lease: Option<Lease>,
    /// The incident reason when the call leaves the hardware state unknown.
    pub unconfirmed: &'static str,
    /// The incident reason when the call's report is lost after it may have touched the bench.
    pub audit_broken: &'static str,
    /// The answer always carries `config_status`, stale or not: these tools are how an agent asks
    /// "which configuration am I talking to?".
    pub always_status: bool,
    /// The result must always say whether its effect happened (the effect trio is filled, unknown
    /// by default).
    pub reports_effect: bool,
    /// A dead owner's last report of this tool can prove it never touched the target.
    pub proves_no_contact: bool,
    /// Every device the tool may touch, each with a grant it needs there (some only with an
    /// argument: a flash's `capture` reads a COM port). Policy decides each call; the property test
    /// (`bench/every_device_tests.rs`) covers exactly these, so a tool cannot gain a device the test
    /// does not refuse.
    pub needs: &'static [Need],
    /// The call reports on leases and incidents without holding one, so its `ok` alone decides
    /// `isError` and the exit code: a lease it reports as quarantined is its answer, not its failure.
    pub ok_alone_concludes: bool,
}

/// A kind of configured device a tool touches, as its declaration names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Touched {
    /// The tool's own debugger entry (`debuggers.<name>`).
    Debugger,
    /// A board a power supply `powers` (its debugger entry).
    PoweredBoard,
    ComPort,
    CanBus,
    PowerSupply,
    /// The upload store (`artifacts.allow_upload`).
    Uploads,
}

/// A grant a tool needs on a device it touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Need {
    pub on: Touched,
    /// The permission flag (`allow_flash`); in a version 1 file only `allow_probe` of the debugger.
    pub grant: &'static str,
    /// Another flag on the same device that serves as well (a session opens a write-only port):
    /// the call is refused only when both are closed.
    pub or: Option<&'static str>,
}

const fn need(on: Touched, grant: &'static str) -> Need {
    Need {
        on,
        grant,
        or: None,
    }
}

const fn need_either(on: Touched, grant: &'static str, or: &'static str) -> Need {
    Need {
        on,
        grant,
        or: Some(or),
    }
}

/// A const setter for each of the gate's flags, named as the flag, so a declaration reads as its
/// chain (`Gate::leased(…).audited().reports_effect()`).
macro_rules! flag_setters {
    ($($flag:ident),+) => {$(
        const fn $flag(self) -> Self {
            Self {
                $flag: true,
                ..self
            }
        }
    )+};
}

impl Gate {
    /// A tool that takes no lease and is not audited.
    pub const LOCAL: Self = Self {
        audited: false,
        lease: None,
        unconfirmed: "unknown_hardware_exception",
        audit_broken: "hardware_exception_audit_broken",
        always_status: false,
        reports_effect: false,
        proves_no_contact: false,
        needs: &[],
        ok_alone_concludes: false,
    };

    /// A tool that acts on a device under a lease, with its two incident reasons.
    const fn leased(lease: Lease, unconfirmed: &'static str, audit_broken: &'static str) -> Self {
        Self {
            lease: Some(lease),
            unconfirmed,
            audit_broken,
            ..Self::LOCAL
        }
    }

    flag_setters!(
        audited,
        always_status,
        reports_effect,
        proves_no_contact,
        ok_alone_concludes
    );

    const fn needs(self, needs: &'static [Need]) -> Self {
        Self { needs, ..self }
    }

    /// The gate of the tool named `name` (a result's or a record's `tool`), if it is declared.
    pub fn of(name: &str) -> Option<Self> {
        name.parse::<ToolId>().ok().map(ToolId::gate)
    }

    /// Whether the call takes a lease.
    pub fn is_leased(self) -> bool {
        self.lease.is_some()
    }

    /// Whether the call is let through a standing incident (it brings a device back to rest).
    pub fn is_containment(self) -> bool {
        matches!(
            self.lease,
            Some(Lease::SessionStop | Lease::Containment | Lease::RunEnd)
        )
    }

    /// Whether a successful call keeps its lease for the session it started.
    pub fn starts_session(self) -> bool {
        self.lease == Some(Lease::SessionStart)
    }

    /// Whether the call ends the lease its session kept.
    pub fn stops_session(self) -> bool {
        self.lease == Some(Lease::SessionStop)
    }

    /// Whether the call goes on without a lease when another process holds the bench.
    pub fn runs_without_lease_when_busy(self) -> bool {
        self.lease == Some(Lease::RunEnd)
    }
}

/// What drives `isError` and exit codes: [`overall_success`], except for a tool whose `ok` alone
/// concludes ([`Gate::ok_alone_concludes`]).
pub fn conclusive_success(outcome: &Outcome) -> bool {
    if Gate::of(&outcome.tool).is_some_and(|gate| gate.ok_alone_concludes) {
        outcome.ok
    } else {
        overall_success(outcome)
    }
}

/// [`conclusive_success`] over a result document (what the CLI's exit code follows).
pub fn conclusive_success_value(result: &Value) -> bool {
    let tool = result
        .get("tool")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if Gate::of(tool).is_some_and(|gate| gate.ok_alone_concludes) {
        result.get("ok").and_then(Value::as_bool).unwrap_or(false)
    } else {
        overall_success_value(result)
    }
}

/// One tool, declared once: [`Declaration::new`] with what every tool states (identity, kind,
/// gate), then a setter for each way it differs from a listed, closed-world tool without arguments.
pub struct Declaration {
    pub id: ToolId,
    pub name: &'static str,
    title: &'static str,
    description: &'static str,
    kind: Kind,
    open_world: bool,
    schema: fn() -> Value,
    availability: Availability,
    pub gate: Gate,
}

impl Declaration {
    const fn new(id: ToolId, name: &'static str, kind: Kind, gate: Gate) -> Self {
        Self {
            id,
            name,
            title: "",
            description: "",
            kind,
            open_world: false,
            schema: schemas::no_arguments,
            availability: Availability::Always,
            gate,
        }
    }

    /// The tool's title and its `tools/list` description.
    const fn about(self, title: &'static str, description: &'static str) -> Self {
        Self {
            title,
            description,
            ..self
        }
    }

    /// The tool's input schema, when it takes arguments.
    const fn schema(self, schema: fn() -> Value) -> Self {
        Self { schema, ..self }
    }

    /// The tool reaches beyond the bench (the network, a package index).
    const fn open_world(self) -> Self {
        Self {
            open_world: true,
            ..self
        }
    }

    /// Only the operator's CLI calls the tool ([`Availability::Operator`]).
    const fn operator_only(self) -> Self {
        Self {
            availability: Availability::Operator,
            ..self
        }
    }
}

/// Every declaration, in `tools/list` order.
pub fn declarations() -> impl Iterator<Item = &'static Declaration> {
    setup::DECLARED
        .iter()
        .chain(debugger::DECLARED)
        .chain(devices::DECLARED)
        .chain(rtt::DECLARED)
        .chain(operator::DECLARED)
}

impl Declaration {
    fn spec(&self) -> ToolSpec {
        let (read_only, destructive, idempotent) = match self.kind {
            Kind::ReadOnly => (true, false, true),
            Kind::Effect {
                destructive,
                idempotent,
            } => (false, destructive, idempotent),
        };
        ToolSpec {
            name: self.name.to_owned(),
            title: self.title.to_owned(),
            description: self.description.to_owned(),
            input_schema: (self.schema)(),
            output_schema: crate::catalogue_output::output_schema(self.id),
            read_only,
            destructive,
            idempotent,
            open_world: self.open_world,
        }
    }

    fn listed(&self, _provisioned: bool) -> bool {
        match self.availability {
            Availability::Always => true,
            Availability::Operator => false,
        }
    }

    /// Whether only the operator's CLI may call this tool.
    pub fn is_operator_only(&self) -> bool {
        self.availability == Availability::Operator
    }
}

/// The tools this server lists, in catalogue order.
pub fn tools(provisioned: bool) -> Vec<ToolSpec> {
    declarations()
        .filter(|def| def.listed(provisioned))
        .map(Declaration::spec)
        .collect()
}

/// One listed tool.
pub fn tool(id: ToolId, provisioned: bool) -> Option<ToolSpec> {
    let def = id.declaration();
    def.listed(provisioned).then(|| def.spec())
}

/// The input schema of a listed tool, for validating a call: built alone, without the rest of its
/// listing (the output schema is the bulk of it and a call does not need it).
pub fn input_schema(id: ToolId, provisioned: bool) -> Option<Value> {
    let def = id.declaration();
    def.listed(provisioned).then(|| (def.schema)())
}

/// The input schema of a tool the operator's CLI calls: a listed one, or an operator-only one.
pub fn operator_input_schema(id: ToolId, provisioned: bool) -> Option<Value> {
    let def = id.declaration();
    (def.listed(provisioned) || def.is_operator_only()).then(|| (def.schema)())
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod derived_tests;
