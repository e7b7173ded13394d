//! The typed error vocabulary: one [`ErrorType`] per plain key of the error catalogue
//! (`errors/`), so an `error_type` that has no catalogue entry cannot be produced by product code.
//! Scoped keys (`target_not_detected:pyocd`) stay lookups of the catalogue; a test holds the enum and
//! the catalogue's plain keys equal.

use std::fmt;
use std::str::FromStr;

macro_rules! error_types {
    ($($variant:ident = $key:literal,)*) => {
        /// A public `error_type`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ErrorType {
            $($variant,)*
        }

        impl ErrorType {
            /// Every error type, in key order.
            pub const ALL: &[ErrorType] = &[$(ErrorType::$variant,)*];

            /// The public key.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ErrorType::$variant => $key,)*
                }
            }
        }
    };
}

error_types! {
    AdapterNotFound = "adapter_not_found",
    AdapterUsbError = "adapter_usb_error",
    AgentMcpConfigInvalid = "agent_mcp_config_invalid",
    AgentPermissionsUnreadable = "agent_permissions_unreadable",
    ArtifactChanged = "artifact_changed",
    ArtifactNotFound = "artifact_not_found",
    ArtifactStagingFailed = "artifact_staging_failed",
    ArtifactTooLarge = "artifact_too_large",
    ArtifactValidationFailed = "artifact_validation_failed",
    AuditBroken = "audit_broken",
    AuditFailed = "audit_failed",
    AuditFailedAfterAction = "audit_failed_after_action",
    AuditUnavailable = "audit_unavailable",
    AuditWriteFailed = "audit_write_failed",
    BackendError = "backend_error",
    BreakpointReconciliationFailed = "breakpoint_reconciliation_failed",
    BridgeProcessReapFailed = "bridge_process_reap_failed",
    BridgeSafeStateUnconfirmed = "bridge_safe_state_unconfirmed",
    CanAdapterCloseFailed = "can_adapter_close_failed",
    CanAdapterInvalidRequest = "can_adapter_invalid_request",
    CanAdapterInvalidResponse = "can_adapter_invalid_response",
    CanAdapterLibraryMissing = "can_adapter_library_missing",
    CanAdapterNotFound = "can_adapter_not_found",
    CanAdapterOpenFailed = "can_adapter_open_failed",
    CanAdapterProcessExited = "can_adapter_process_exited",
    CanAdapterProcessStartFailed = "can_adapter_process_start_failed",
    CanAdapterProtocolUnsupported = "can_adapter_protocol_unsupported",
    CanAdapterTimeout = "can_adapter_timeout",
    CanBackendNotAvailable = "can_backend_not_available",
    CanBrokerAuthenticationFailed = "can_broker_authentication_failed",
    CanBrokerDisconnected = "can_broker_disconnected",
    CanBrokerInvalidMessage = "can_broker_invalid_message",
    CanBrokerProtocolMismatch = "can_broker_protocol_mismatch",
    CanBrokerStopping = "can_broker_stopping",
    CanBrokerUnavailable = "can_broker_unavailable",
    CanBrokerWrongBus = "can_broker_wrong_bus",
    CanBusGated = "can_bus_gated",
    CanBusIncident = "can_bus_incident",
    CanBusNotConfigured = "can_bus_not_configured",
    CanChannelNotAvailable = "can_channel_not_available",
    CanClassicFrameTooLarge = "can_classic_frame_too_large",
    CanFdFrameLengthInvalid = "can_fd_frame_length_invalid",
    CanFdRemoteFrameUnsupported = "can_fd_remote_frame_unsupported",
    CanInterfaceDown = "can_interface_down",
    CanInterfaceNotFound = "can_interface_not_found",
    CanListenOnlyConflict = "can_listen_only_conflict",
    CanListenOnlyMode = "can_listen_only_mode",
    CanListenOnlyUnconfirmed = "can_listen_only_unconfirmed",
    CanListenOnlyUnsupported = "can_listen_only_unsupported",
    CanParticipantBusy = "can_participant_busy",
    CanParticipantFilterViolation = "can_participant_filter_violation",
    CanParticipantFrameBudgetExhausted = "can_participant_frame_budget_exhausted",
    CanParticipantIncident = "can_participant_incident",
    CanParticipantNotConfigured = "can_participant_not_configured",
    CanParticipantRequired = "can_participant_required",
    CanQueueClearFailed = "can_queue_clear_failed",
    CanQueueClearLimit = "can_queue_clear_limit",
    CanReadFailed = "can_read_failed",
    CanSendFailed = "can_send_failed",
    CanSessionNotOwned = "can_session_not_owned",
    CanonicalWritePending = "canonical_write_pending",
    CaptureFailed = "capture_failed",
    CaptureTimeout = "capture_timeout",
    CleanupFailed = "cleanup_failed",
    ComPortBusy = "com_port_busy",
    ComPortCloseFailed = "com_port_close_failed",
    ComPortDiscoveryFailed = "com_port_discovery_failed",
    ComPortIdentityMismatch = "com_port_identity_mismatch",
    ComPortIdentityUnverified = "com_port_identity_unverified",
    ComPortNotBound = "com_port_not_bound",
    ComPortNotConfigured = "com_port_not_configured",
    ComPortOpenFailed = "com_port_open_failed",
    ComPortReservedForPowerSupply = "com_port_reserved_for_power_supply",
    ComparatorUnmet = "comparator_unmet",
    ConfigChanged = "config_changed",
    ConfigChangedUnderneath = "config_changed_underneath",
    ConfigExists = "config_exists",
    ConfigFileNotFound = "config_file_not_found",
    ConfigInvalid = "config_invalid",
    ConfigReloadInOpenRun = "config_reload_in_open_run",
    ConfigStale = "config_stale",
    ConfigUnreadable = "config_unreadable",
    ConfigWriteFailed = "config_write_failed",
    ConfigWriteInOpenRun = "config_write_in_open_run",
    CoordinationStateInvalid = "coordination_state_invalid",
    DebuggerCommandRejected = "debugger_command_rejected",
    DebuggerConfigNotFound = "debugger_config_not_found",
    DebuggerError = "debugger_error",
    DebuggerNotExecutable = "debugger_not_executable",
    DebuggerNotFound = "debugger_not_found",
    DetachResumeNotConfirmed = "detach_resume_not_confirmed",
    DeviceAccessDenied = "device_access_denied",
    DeviceBusy = "device_busy",
    FlashEraseFailed = "flash_erase_failed",
    FlashFailed = "flash_failed",
    GdbAsyncUnsupported = "gdb_async_unsupported",
    GdbNotFound = "gdb_not_found",
    GdbStartFailed = "gdb_start_failed",
    HaltNotConfirmed = "halt_not_confirmed",
    HardwareActionException = "hardware_action_exception",
    HardwareMismatch = "hardware_mismatch",
    HoldExpired = "hold_expired",
    InstallationBroken = "installation_broken",
    InstallationChangedAfterFailedUpgrade = "installation_changed_after_failed_upgrade",
    InstallationInUse = "installation_in_use",
    InternalError = "internal_error",
    Interrupted = "interrupted",
    InvalidArgument = "invalid_argument",
    JunitXmlRequiresSynchronousRun = "junit_xml_requires_synchronous_run",
    JunitXmlWriteFailed = "junit_xml_write_failed",
    LabgridPlaceNotFound = "labgrid_place_not_found",
    LabgridUnavailable = "labgrid_unavailable",
    McpCommandUntrusted = "mcp_command_untrusted",
    McpConfigConflict = "mcp_config_conflict",
    McpConfigExists = "mcp_config_exists",
    MemoryReadFailed = "memory_read_failed",
    NotSupported = "not_supported",
    OperatorConfirmationRequired = "operator_confirmation_required",
    OperatorOnlyKey = "operator_only_key",
    OutputValidationFailed = "output_validation_failed",
    OutputWriteFailed = "output_write_failed",
    PermissionChangeInOpenRun = "permission_change_in_open_run",
    PermissionDenied = "permission_denied",
    PermissionWideningDenied = "permission_widening_denied",
    PowerSupplyIdentityMismatch = "power_supply_identity_mismatch",
    PowerSupplyIdentityUnknown = "power_supply_identity_unknown",
    PowerSupplyLimitExceeded = "power_supply_limit_exceeded",
    PowerSupplyNoReply = "power_supply_no_reply",
    PowerSupplyReadbackMismatch = "power_supply_readback_mismatch",
    ProbeDiscoveryFailed = "probe_discovery_failed",
    ProbeInventoryIncomplete = "probe_inventory_incomplete",
    ProbeServerOpenFailed = "probe_server_open_failed",
    QuarantineChanged = "quarantine_changed",
    QuarantineIdRequired = "quarantine_id_required",
    RecoveryAuditFailed = "recovery_audit_failed",
    RecoveryPersistFailed = "recovery_persist_failed",
    RecoveryRequiresPhysicalCheck = "recovery_requires_physical_check",
    RedactionUnavailable = "redaction_unavailable",
    ReportNotFound = "report_not_found",
    ReportStateDamaged = "report_state_damaged",
    ReportUnreadable = "report_unreadable",
    ReportWriteFailed = "report_write_failed",
    ResetFailed = "reset_failed",
    ResourceBusy = "resource_busy",
    ResourceNotQuarantined = "resource_not_quarantined",
    ResourceQuarantined = "resource_quarantined",
    RunAlreadyActive = "run_already_active",
    RunFailed = "run_failed",
    RunNotFound = "run_not_found",
    RunReportInvalid = "run_report_invalid",
    RunReportNotFound = "run_report_not_found",
    RunReportUnreadable = "run_report_unreadable",
    RttChannelNotFound = "rtt_channel_not_found",
    RttControlBlockInvalid = "rtt_control_block_invalid",
    RttControlBlockNotFound = "rtt_control_block_not_found",
    RttExpectTimeout = "rtt_expect_timeout",
    RttMemoryUnavailable = "rtt_memory_unavailable",
    RttNotConfigured = "rtt_not_configured",
    RttWriteIncomplete = "rtt_write_incomplete",
    RunStateInvalid = "run_state_invalid",
    RunStateUnwritable = "run_state_unwritable",
    RunStopped = "run_stopped",
    RunWorkerFailed = "run_worker_failed",
    RunWorkerGone = "run_worker_gone",
    RunWorkerUnresponsive = "run_worker_unresponsive",
    SchemaExists = "schema_exists",
    SerialReadFailed = "serial_read_failed",
    SerialWriteFailed = "serial_write_failed",
    SerialWriteIncomplete = "serial_write_incomplete",
    SessionAlreadyActive = "session_already_active",
    SessionNotActive = "session_not_active",
    SimFailed = "sim_failed",
    SimStartFailed = "sim_start_failed",
    SimStopFailed = "sim_stop_failed",
    SkillConflict = "skill_conflict",
    SkillExists = "skill_exists",
    StepFailed = "step_failed",
    StopReasonNotAvailable = "stop_reason_not_available",
    SymbolNotFound = "symbol_not_found",
    SymbolResolutionFailed = "symbol_resolution_failed",
    SymbolSizeMismatch = "symbol_size_mismatch",
    SymbolSourceChanged = "symbol_source_changed",
    SymbolSourceNotAvailable = "symbol_source_not_available",
    SymbolWidthNotNumeric = "symbol_width_not_numeric",
    TargetException = "target_exception",
    TargetNotDetected = "target_not_detected",
    TargetStateUnconfirmed = "target_state_unconfirmed",
    TargetTypeInvalid = "target_type_invalid",
    TestConfigInvalid = "test_config_invalid",
    TestConfigNotFound = "test_config_not_found",
    TestConfigUnreadable = "test_config_unreadable",
    Timeout = "timeout",
    UartExpectTimeout = "uart_expect_timeout",
    UndeclaredDevice = "undeclared_device",
    UnexpectedBreakpoint = "unexpected_breakpoint",
    UnexpectedStop = "unexpected_stop",
    UnknownDebuggerError = "unknown_debugger_error",
    UnknownDevice = "unknown_device",
    UnknownTool = "unknown_tool",
    UnsafeConfiguredPath = "unsafe_configured_path",
    UnsupportedAgent = "unsupported_agent",
    UpgradeBlockedByPin = "upgrade_blocked_by_pin",
    UpgradeFailed = "upgrade_failed",
    UpgradeInOpenRun = "upgrade_in_open_run",
    UpgradeManagerNotFound = "upgrade_manager_not_found",
    VerifyFailed = "verify_failed",
    WorkspaceIsHome = "workspace_is_home",
}

/// A key that names no error type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownErrorType;

impl FromStr for ErrorType {
    type Err = UnknownErrorType;

    fn from_str(key: &str) -> Result<Self, UnknownErrorType> {
        Self::ALL
            .iter()
            .copied()
            .find(|e| e.as_str() == key)
            .ok_or(UnknownErrorType)
    }
}

impl ErrorType {
    /// The error type a lower layer names (`ConfigError::error_type`, `DriverError::error_type`,
    /// a worker child's answer): those layers cannot name this enum, so their keys are checked
    /// here. A key outside the catalogue becomes `internal_error` rather than leave the gate; the
    /// catalogue scan test finds every such key in the layers' `fn error_type` tables.
    pub fn layer(key: &str) -> Self {
        key.parse().unwrap_or(Self::InternalError)
    }
}

impl fmt::Display for ErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl AsRef<str> for ErrorType {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl serde::Serialize for ErrorType {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}
