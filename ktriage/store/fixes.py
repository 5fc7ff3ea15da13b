"""How the store's refusals name what a user does about them, one home for the store's modules.

Why: every verb that opens a store takes it as ``db=`` in a library call and as ``--db`` on the
command line (``$KTRIAGE_DB`` is that option's environment variable); a fix naming ``--db`` alone told
a ``kt.runs_list(...)`` caller of nothing it can pass. Why a module of its own: the engine, the schema,
the store and the JSON codec all word these fixes, and the codec sits below the others (the engine
imports it), so it may import none of them.
"""

from __future__ import annotations

from ktriage.errors import option, run_as, spelled, worded

DB = option("db", "--db")
EXAMPLE_URL = "sqlite:////path/ktriage.db"
# Who makes a store, named both ways: the fix sent a library caller to `ktriage bench` only.
MADE_BY = (
    "a store is made by "
    + run_as("kt.bench(...)", "ktriage bench")
    + " or "
    + run_as("kt.runs_import(path='R.json')", "ktriage runs import R.json")
)
# The fix of a store whose rows do not read back (edited, damaged): the run out, its export back in.
DAMAGED_FIX = worded(
    lambda o: (
        f"the store was edited or damaged: delete the run ({spelled(run_as('kt.runs_delete(run=...)', 'ktriage runs delete RUN'), o)}) and "
        f"re-import it from its export ({spelled(run_as('kt.runs_import(path=...)', 'ktriage runs import R.json'), o)}), or point "
        f"{spelled(DB, o)} at another store"
    )
)
