"""Host facts: read without ``platform`` (the job path does not import it), they must
still say what ``platform`` says about this host."""

from __future__ import annotations

import platform

from fslab.provenance import host_facts


def test_host_facts_name_the_kernel_machine_and_python_as_platform_does():
    facts = host_facts()
    uname = platform.uname()
    assert (facts["hostname"], facts["kernel"], facts["kernel_version"], facts["machine"]) == (
        uname.node, uname.release, uname.version, uname.machine)
    assert facts["python"] == platform.python_version()
