"""Headless Chromium, to look at a report the way a reader's browser does.

Used by the report's tests (the rendered DOM, the network log) and by
scripts/screenshot_report.py. Chromium runs with a fresh profile, its background services
turned off where a switch exists, and no host name resolving. Chromium still starts a few
requests of its own (network time, spelling dictionary, account check); `page_requests`
tells the page's requests apart from those in its network log.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-default-apps",
    "--hide-scrollbars",
    "--host-resolver-rules=MAP * ~NOTFOUND",  # no host name resolves: nothing reaches the network
)


class ChromiumMissing(RuntimeError):
    pass


def binary() -> str:
    """The Chromium executable on PATH (Debian's `chromium` package), or ChromiumMissing."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    raise ChromiumMissing("chromium is not installed: `apt-get install -y chromium` (what .ci/run does)")


def run(url: str, *args: str, timeout: float = 120.0) -> str:
    """Run headless Chromium on `url` with extra `args`; its standard output."""
    with tempfile.TemporaryDirectory(prefix="arena-chromium-") as profile:
        command = [binary(), *FLAGS, f"--user-data-dir={profile}", *args, url]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"chromium exited with {done.returncode}: {done.stderr.strip()[-2000:]}")
    return done.stdout


def dump_dom(url: str, net_log: Path | None = None) -> str:
    """The page's DOM after its scripts ran, serialised; optionally with a network log."""
    extra = [f"--log-net-log={net_log}", "--net-log-capture-mode=Everything"] if net_log else []
    return run(url, "--virtual-time-budget=2000", *extra, "--dump-dom")


def page_requests(net_log: Path) -> list[str]:
    """The URLs of the requests a page loaded from a file made, from a --log-net-log file.

    A page's requests carry the file:// site in their network isolation key; Chromium's own
    background requests carry another site or none."""
    log = json.loads(net_log.read_text(encoding="utf-8"))
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [
        event["params"]["url"]
        for event in log["events"]
        if event["type"] == start_job
        and "url" in event.get("params", {})
        and event["params"].get("network_isolation_key", "").startswith("file://")
    ]


def screenshot(url: str, png: Path, width: int = 1280, height: int = 2400) -> None:
    run(url, f"--window-size={width},{height}", "--virtual-time-budget=5000", f"--screenshot={png.resolve()}")
