"""The openai provider end to end against a real OpenAI-compatible server on 127.0.0.1:
llama-cpp-python's server serving the SmolLM2 GGUF, started and stopped here."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from contestants.llm import get_provider
from contestants.llm.local_provider import smollm2_path
from market.types import Decision

# `python -m llama_cpp.server`, its model loaded with the weights as stored (see
# contestants.llm.local_provider.weights_as_stored: repacked ones crash on AMX machines).
SERVER = """
import runpy
from contestants.llm.local_provider import weights_as_stored
with weights_as_stored():
    runpy.run_module("llama_cpp.server", run_name="__main__")
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("llama_server") / "stderr.log"
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            SERVER,
            "--model",
            str(smollm2_path()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--model_alias",
            "smollm2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),  # a file, not a pipe: the server logs more than a pipe buffers
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{base_url}/models", timeout=1).read()
                break
            except OSError:
                if process.poll() is not None:
                    pytest.fail(f"llama_cpp.server exited: {log.read_text(errors='replace')[-2000:]}")
                if time.monotonic() > deadline:
                    pytest.fail("llama_cpp.server did not answer within 120 s")
                time.sleep(0.2)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.mark.parametrize("structured", ["tool", "json_object"])
def test_decisions_through_the_server(llama_server, decision_request, structured):
    provider = get_provider(
        "openai/smollm2",
        {"base_url": llama_server, "api_key_env": None, "no_cache": True, "structured": structured},
    )
    for seed in (1, 2):
        completion = provider.complete(decision_request.model_copy(update={"seed": seed}))
        Decision.model_validate(completion.output)
        assert completion.usage.input_tokens > 20 and completion.usage.output_tokens > 0
        assert completion.attempts == 1
        assert completion.cost is None  # no price for this model: unknown, not free
