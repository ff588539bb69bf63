"""The API keys the tests' hosted models are called with: sentinels, looked for wherever no key
may be (what a run prints, its files, its database). The tests' Ray cluster starts with them in
its environment (tests/conftest.py, `shared_ray_address`), so that its workers, the contestants'
hosts, read them as they read a user's."""

OPENAI_KEY = "sk-SENTINEL-openai-5d1e"
ANTHROPIC_KEY = "sk-ant-SENTINEL-77c2"
MOODY_KEY = "sk-arena-sentinel-7f3a9c"  # of tests/tournaments/test_llm_tournament.py's server

KEYS = {"ARENA_OPENAI_KEY": OPENAI_KEY, "ARENA_ANTHROPIC_KEY": ANTHROPIC_KEY, "ARENA_MOODY_KEY": MOODY_KEY}
