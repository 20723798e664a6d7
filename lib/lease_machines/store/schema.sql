-- Schema of LeaseMachines::Store (format 1). The store creates it on first use; apply it yourself when you manage
-- the schema with migrations. On open, the store checks the format row and every column's name and type, and
-- refuses tables of another shape (a foreign table of the same name, a newer format). Tokens and owners are SQLite
-- INTEGERs (signed 64-bit): tokens above 2**63-1 are refused, owners above it are stored as their two's-complement
-- value. Times are Float seconds (REAL), exactly the Floats the gem returns.

-- The schema's format, in one row: a store refuses a database whose format it does not know.
CREATE TABLE IF NOT EXISTS lease_machines_schema (
  id     INTEGER PRIMARY KEY CHECK (id = 1),
  format INTEGER NOT NULL
) STRICT;
INSERT INTO lease_machines_schema (id, format) VALUES (1, 1) ON CONFLICT (id) DO NOTHING;

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
