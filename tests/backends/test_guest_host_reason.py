"""A run the guest failed on its disk's I/O errors names the host's reason (QEMU's
BLOCK_IO_ERROR events, read from its monitor); other failures are left as they were."""

from fslab.backends.guest.backend import _with_host_reasons
from fslab.backends.guest.qmp import describe_event
from fslab.jobdata.record import RunRecord
from fslab.kernel_log import KERNEL_IO_ERRORS, describe_errors

EVENT = {"event": "BLOCK_IO_ERROR", "data": {"device": "disk0", "operation": "write", "action": "report",
                                             "reason": "No space left on device", "nospace": True}}
LINE = "I/O error, dev vda, sector 8 op 0x1:(WRITE)"


def failed(error: str, provenance: dict) -> RunRecord:
    return RunRecord("c", 0, 0, "failed", 0.0, 1.0, error=error, provenance=provenance)


def test_the_event_says_disk_operation_reason_and_action() -> None:
    assert describe_event(EVENT) == "disk0 write: No space left on device (QEMU's action: report)"


def test_a_disk_error_failure_gets_the_hosts_reason_and_nothing_else_does() -> None:
    facts = {"host_io_errors": [describe_event(EVENT)] * 3}
    error = describe_errors([LINE], "during the run")
    assert error.startswith(f'the kernel logged 1 block I/O error on the device during the run ("{LINE}"):')
    assert describe_errors([LINE] * 3, "during the run").startswith(
        f'the kernel logged 3 block I/O errors on the device during the run ("{LINE}" and 2 more):')
    disk = failed(error, {KERNEL_IO_ERRORS: [LINE]})
    assert _with_host_reasons(disk, facts).error == (
        f"{error}; the host's reason: disk0 write: No space left on device (QEMU's action: report) and 2 more")
    other = failed("fio exited with status 1", {})
    assert _with_host_reasons(other, facts).error == "fio exited with status 1"
    assert _with_host_reasons(disk, {}).error == error  # the host reported nothing
