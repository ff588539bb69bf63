"""The CPU-seconds a command costs the machine, every process it starts included (Ray's workers
and servers, browsers, `arena` runs), however they detach: the command runs in a Linux cgroup
(v1 `cpuacct`) of its own, whose counter every descendant adds to. On a machine whose cores
are busy the whole time, as they are under the test suite, CPU-seconds are what a change must
cut; wall time follows. Needs root (it makes the cgroup). Prints JSON.

    uv run python benchmarks/command_cpu.py uv run --extra test pytest tests/tournaments/test_crashes.py
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command and its arguments")
    command = parser.parse_args().command
    if not command:
        parser.error("name a command")
    if not CPUACCT.is_dir():
        sys.exit(f"error: no cgroup v1 cpuacct controller at {CPUACCT}")
    group = CPUACCT / f"command_cpu_{os.getpid()}"
    group.mkdir()
    try:
        started = time.monotonic()
        process = subprocess.Popen(  # joins the cgroup before it runs the command
            ["sh", "-c", 'echo $$ > "$0/tasks" && exec "$@"', str(group), *command]
        )
        status = process.wait()
        wall = time.monotonic() - started
        time.sleep(1)  # what the command left behind exits, and is counted
        cpu = int((group / "cpuacct.usage").read_text()) / 1e9
        for pid in (group / "tasks").read_text().split():  # a server or node the command left running
            os.kill(int(pid), signal.SIGKILL)
    finally:
        for _ in range(50):  # a killed process leaves the cgroup once it has exited
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)
    print(
        json.dumps(
            {
                "command": command,
                "exit_status": status,
                "cpu_s": round(cpu, 2),
                "wall_s": round(wall, 2),
                "machine": platform.processor() or platform.machine(),
                "cores": os.cpu_count(),
            }
        )
    )


if __name__ == "__main__":
    main()
