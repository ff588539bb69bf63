"""A test instrument (tests/tournaments/test_crashes.py), not part of arena: on the PYTHONPATH
of an `arena run`, Python imports it at start-up. In that `arena run` process alone (not in
its Ray workers, which get the same environment) it holds the first commit that would store
two or more matches after some are stored already: the matches' rows are written in the
transaction, not committed; it writes what it holds to the file $ARENA_PAUSE_MARKER (as
JSON: the keys stored before and the keys in the transaction) and sleeps, for the test to
kill the run there."""

import json
import os
import sys
import time

MARKER = os.environ.get("ARENA_PAUSE_MARKER")

if MARKER and os.path.basename(sys.argv[0]) == "arena" and sys.argv[1:2] == ["run"]:
    from sqlalchemy import event, text
    from sqlalchemy.orm import Session

    @event.listens_for(Session, "before_commit")
    def _pause_a_write_of_several_matches(session: Session) -> None:
        session.flush()
        keys = text("select key from match")
        with session.get_bind().connect() as other:  # sees what is committed only
            stored = set(other.execute(keys).scalars())
        writing = set(session.execute(keys).scalars()) - stored
        if stored and len(writing) >= 2:
            with open(MARKER + ".part", "w") as marker:
                json.dump({"stored": sorted(stored), "writing": sorted(writing)}, marker)
            os.replace(MARKER + ".part", MARKER)
            time.sleep(3600)
