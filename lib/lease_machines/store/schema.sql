-- Schema of LeaseMachines::Store (format 2). The store creates it on first use; apply it yourself when you manage
-- the schema with migrations. On open, the store checks the format row and every column's name and type, and
-- refuses tables of another shape (a foreign table of the same name, a newer format). Tokens and owners are SQLite
-- INTEGERs (signed 64-bit): tokens above 2**63-1 are refused, owners above it are stored as their two's-complement
-- value. Times are Float seconds (REAL), exactly the Floats the gem returns.

-- The schema's format, in one row: a store refuses a database whose format it does not know.
CREATE TABLE IF NOT EXISTS lease_machines_schema (
  id     INTEGER PRIMARY KEY CHECK (id = 1),
  format INTEGER NOT NULL
) STRICT;
INSERT INTO lease_machines_schema (id, format) VALUES (1, 2) ON CONFLICT (id) DO NOTHING;

-- One row per resource: the authority's checkpoint.
CREATE TABLE IF NOT EXISTS lease_machines_leases (
  resource    TEXT    PRIMARY KEY,
  owner       INTEGER,                      -- NULL when vacant
  token       INTEGER,                      -- NULL when vacant
  expires_at  REAL,                         -- NULL when vacant
  last_issued INTEGER,                      -- the token high-water; kept after release; NULL before any grant
  observed    REAL    NOT NULL DEFAULT 0.0, -- the clock watermark
  revision    INTEGER NOT NULL DEFAULT 0,   -- rises with every accepted change
  CHECK ((owner IS NULL) = (token IS NULL) AND (token IS NULL) = (expires_at IS NULL)),
  CHECK (token IS NULL OR (last_issued IS NOT NULL AND token BETWEEN 1 AND last_issued))
) STRICT;

-- One row per protected resource: the highest token its writes have carried.
CREATE TABLE IF NOT EXISTS lease_machines_fences (
  resource TEXT    PRIMARY KEY,
  highest  INTEGER NOT NULL CHECK (highest >= 1)
) STRICT;

-- The slots of a semaphore (acquire with limit: N) above slot 0, which is the resource's row above: one row per
-- resource and slot, each a lease of its own.
CREATE TABLE IF NOT EXISTS lease_machines_slots (
  resource    TEXT    NOT NULL,
  slot        INTEGER NOT NULL CHECK (slot BETWEEN 1 AND 1023),
  owner       INTEGER,
  token       INTEGER,
  expires_at  REAL,
  last_issued INTEGER,
  observed    REAL    NOT NULL DEFAULT 0.0,
  revision    INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (resource, slot),
  CHECK ((owner IS NULL) = (token IS NULL) AND (token IS NULL) = (expires_at IS NULL)),
  CHECK (token IS NULL OR (last_issued IS NOT NULL AND token BETWEEN 1 AND last_issued))
) STRICT;

-- The fence of each slot above 0 (slot 0's is the resource's row above): the highest token its writes have carried.
CREATE TABLE IF NOT EXISTS lease_machines_slot_fences (
  resource TEXT    NOT NULL,
  slot     INTEGER NOT NULL CHECK (slot BETWEEN 1 AND 1023),
  highest  INTEGER NOT NULL CHECK (highest >= 1),
  PRIMARY KEY (resource, slot)
) STRICT;

-- The event log (since format 2): one row per decision (every accepted change, and every refusal with its reason)
-- and per fenced write (accepted with the mark it left, or refused with the mark that refused it), written in the
-- request's own transaction. id rises with every event (AUTOINCREMENT: never reused, even after pruning); seq counts
-- one lease's events (a resource's, or one slot's of its semaphore), so that each request prunes in constant work:
-- the lease's event that falls out of its newest keep_events, and the log's oldest ones older than events_max_age.
CREATE TABLE IF NOT EXISTS lease_machines_events (
  id                  INTEGER PRIMARY KEY AUTOINCREMENT,
  resource            TEXT    NOT NULL,
  slot                INTEGER NOT NULL CHECK (slot BETWEEN 0 AND 1023),
  seq                 INTEGER NOT NULL CHECK (seq >= 1),
  kind                TEXT    NOT NULL,
  at                  REAL    NOT NULL,
  owner               INTEGER,                 -- the lease's owner; for a refusal, who asked
  token               INTEGER,                 -- the lease's token; for a refusal or a fenced write, the one presented
  expires_at          REAL,
  revision            INTEGER,                 -- the lease row's revision after an accepted change
  reason              TEXT,                    -- why a request or a write was refused
  replaced_owner      INTEGER,                 -- the lease record an accepted change replaced (a takeover's expired one)
  replaced_token      INTEGER,
  replaced_expires_at REAL,
  highest             INTEGER                  -- a fenced write's mark: the one it left, or the one that refused it
) STRICT;
CREATE INDEX IF NOT EXISTS lease_machines_events_lease ON lease_machines_events (resource, slot, seq);

-- A format 1 database (before the event log) has just been given the log above: its format is raised.
UPDATE lease_machines_schema SET format = 2 WHERE id = 1 AND format = 1;
