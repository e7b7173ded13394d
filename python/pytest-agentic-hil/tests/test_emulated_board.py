"""Through the plugin, on the emulated board: flash, read the boot banner, read a symbol."""

from pytest_agentic_hil import Server, overall_success


def test_a_flashed_firmware_boots_and_a_symbol_reads_through_the_gate(emulated_board, agentic_hil):
    started = agentic_hil.call("com_session_start", port_id="uart")
    assert overall_success(started), started

    flashed = agentic_hil.call("flash_firmware", image_path="fw/ahil-fw-v2.elf", reset_after_flash=True)
    assert overall_success(flashed), flashed
    assert flashed["verify"] is True, flashed
    assert flashed["side_effect_status"] == "committed", flashed

    # The banner names the version after "boot ok": reading up to it shows the new image booted.
    read = agentic_hil.call("com_read", port_id="uart", until="ahil-fw 2.0", wait_timeout_s=10)
    assert overall_success(read), read
    assert "boot ok" in read["data"]["text"], read

    session = agentic_hil.call("debug_start_session", image_path="fw/ahil-fw-v2.elf", mode="attach")
    assert overall_success(session), session
    value = agentic_hil.call("debug_symbol_value", symbol="g_u32")
    assert overall_success(value), value
    assert value["value_unsigned"] == 0xDEADBEEF, value

    stopped = agentic_hil.call("debug_stop_session")
    assert overall_success(stopped), stopped
    # The com session stays open on purpose: the fixture's teardown ends it.
    assert agentic_hil.open_sessions() == ["com_session_start(port_id='uart')"]


def test_the_previous_test_s_session_was_ended_by_the_fixture(emulated_board, agentic_hil_env):
    # A session still open would hold the port's device lock: another server would get device_busy.
    other = Server(agentic_hil_env["AGENTIC_HIL_BIN"], emulated_board, agentic_hil_env)
    other.start()
    try:
        taken = other.call("com_session_start", {"port_id": "uart"})
        assert overall_success(taken), taken
        assert other.call("com_session_stop", {"port_id": "uart"})["ok"] is True
    finally:
        other.close()


def test_a_symbol_outside_the_allowed_list_is_refused_without_touching_the_board(emulated_board, agentic_hil):
    session = agentic_hil.call("debug_start_session", image_path="fw/ahil-fw-v2.elf")
    assert overall_success(session), session
    refused = agentic_hil.call("debug_symbol_value", symbol="counter")
    assert not overall_success(refused)
    assert refused["error_type"] == "permission_denied", refused
