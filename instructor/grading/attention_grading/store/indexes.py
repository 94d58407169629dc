"""The gradebook's indexes: what nbgrader's tables lack for a large class.

nbgrader declares its foreign keys but no index on them; only its unique constraints make
indexes, and those lead with the other column (``grade (cell_id, notebook_id)``). So every
lookup of a submission's grades, comments or notebooks (``find_submission``, the
``score``/``max_score`` column properties, a standing) scans its whole table: 1 ms at 36
submissions, 19 ms at 5,400. ``ensure`` adds one index on each such column, on SQLite and on
PostgreSQL (``CREATE INDEX IF NOT EXISTS``), when ``make grade`` opens the course's gradebook.
An existing gradebook is migrated in place by the same statements: an index changes no row,
and a second run does nothing. nbgrader's alembic version is left as it is (an index is not
part of its schema's version), so stock ``nbgrader`` commands open the gradebook as before.
"""
from sqlalchemy import inspect, text

# (table, column): the columns nbgrader's own queries and the course's filter or join on, with
# no index leading with them.
INDEXED = (
    ("grade", "notebook_id"),                  # a submitted notebook's grades (scores, standing)
    ("comment", "notebook_id"),                # its comments (standing, feedback)
    ("submitted_notebook", "assignment_id"),   # a submission's notebooks
    ("submitted_assignment", "student_id"),    # a learner's submissions
    ("base_cell", "notebook_id"),              # a lesson's grade, solution and task cells (max_score)
    ("source_cell", "notebook_id"),            # a lesson's source cells
    ("notebook", "assignment_id"),             # a lesson's notebooks
)


def index_name(table, column):
    return f"ix_attention_{table}_{column}"


def missing(engine):
    """The (table, column) pairs of ``INDEXED`` whose index the database does not hold."""
    inspector = inspect(engine)
    tables = set(inspector.get_table_names())
    have = {(table, index["name"]) for table in tables for index in inspector.get_indexes(table)}
    return [(table, column) for table, column in INDEXED
            if table in tables and (table, index_name(table, column)) not in have]


def ensure(gb):
    """Create the indexes of ``INDEXED`` that the open gradebook ``gb`` lacks; return the
    (table, column) pairs indexed now (empty when it had them all)."""
    added = missing(gb.engine)
    if not added:
        return []
    try:
        for table, column in added:         # on the session's own connection: no second writer
            gb.db.execute(text(f"CREATE INDEX IF NOT EXISTS {index_name(table, column)} ON {table} ({column})"))
        gb.db.commit()
    except Exception:
        gb.db.rollback()
        raise
    return added
