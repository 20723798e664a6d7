-- Schema of LeaseMachines::Store on MySQL and MariaDB (format 2), InnoDB tables. The store creates it on first use;
-- apply it yourself when you manage the schema with migrations (each statement ends with a semicolon at the end of
-- its line). On open, the store checks the format row and every column's name and type, and refuses tables of another
-- shape (a foreign table of the same name, a newer format). Resource names are VARBINARY: the exact UTF-8 bytes, up
-- to the core's 1,024, compared bytewise (a case-insensitive collation would make "Report" and "report" one lease).
-- Tokens and owners are BIGINTs (signed 64-bit): tokens above 2**63-1 are refused, owners above it are stored as
-- their two's-complement value. Times are Float seconds since the Unix epoch (DOUBLE), exactly the Floats the gem
-- returns.

-- The schema's format, in one row: a store refuses a database whose format it does not know.
CREATE TABLE IF NOT EXISTS lease_machines_schema (
  id     INT NOT NULL PRIMARY KEY CHECK (id = 1),
  format INT NOT NULL
) ENGINE = InnoDB;
INSERT IGNORE INTO lease_machines_schema (id, format) VALUES (1, 2);

-- One row per resource: the authority's checkpoint.
CREATE TABLE IF NOT EXISTS lease_machines_leases (
  resource    VARBINARY(1024) NOT NULL PRIMARY KEY,
  owner       BIGINT          NULL,              -- NULL when vacant
  token       BIGINT          NULL,              -- NULL when vacant
  expires_at  DOUBLE          NULL,              -- NULL when vacant
  last_issued BIGINT          NULL,              -- the token high-water; kept after release; NULL before any grant
  observed    DOUBLE          NOT NULL DEFAULT 0, -- the clock watermark
  revision    BIGINT          NOT NULL DEFAULT 0, -- rises with every accepted change
  CHECK ((owner IS NULL) = (token IS NULL) AND (token IS NULL) = (expires_at IS NULL)),
  CHECK (token IS NULL OR (last_issued IS NOT NULL AND token BETWEEN 1 AND last_issued))
) ENGINE = InnoDB;

-- The token epoch the store issues in, and the server's history it was taken in: one row. Tokens of epoch E are above
-- E * 2**40 (the core's TokenEpoch). history names the server that took it (MySQL's server_uuid, MariaDB's server_id):
-- a promoted replica is another server, so the first grant after a failover moves the epoch above every one the
-- database used. A backup restored, or a copy of the data directory started, is the same server: set history to ''
-- before its first grant (README, Failover).
CREATE TABLE IF NOT EXISTS lease_machines_history (
  id      INT          NOT NULL PRIMARY KEY CHECK (id = 1),
  epoch   BIGINT       NOT NULL CHECK (epoch >= 0),
  history VARCHAR(255) NOT NULL
) ENGINE = InnoDB;

-- One row per protected resource: the highest token its writes have carried.
CREATE TABLE IF NOT EXISTS lease_machines_fences (
  resource VARBINARY(1024) NOT NULL PRIMARY KEY,
  highest  BIGINT          NOT NULL CHECK (highest >= 1)
) ENGINE = InnoDB;

-- The slots of a semaphore (acquire with limit: N) above slot 0, which is the resource's row above: one row per
-- resource and slot, each a lease of its own.
CREATE TABLE IF NOT EXISTS lease_machines_slots (
  resource    VARBINARY(1024) NOT NULL,
  slot        INT             NOT NULL CHECK (slot BETWEEN 1 AND 1023),
  owner       BIGINT          NULL,
  token       BIGINT          NULL,
  expires_at  DOUBLE          NULL,
  last_issued BIGINT          NULL,
  observed    DOUBLE          NOT NULL DEFAULT 0,
  revision    BIGINT          NOT NULL DEFAULT 0,
  PRIMARY KEY (resource, slot),
  CHECK ((owner IS NULL) = (token IS NULL) AND (token IS NULL) = (expires_at IS NULL)),
  CHECK (token IS NULL OR (last_issued IS NOT NULL AND token BETWEEN 1 AND last_issued))
) ENGINE = InnoDB;

-- The fence of each slot above 0 (slot 0's is the resource's row above): the highest token its writes have carried.
CREATE TABLE IF NOT EXISTS lease_machines_slot_fences (
  resource VARBINARY(1024) NOT NULL,
  slot     INT             NOT NULL CHECK (slot BETWEEN 1 AND 1023),
  highest  BIGINT          NOT NULL CHECK (highest >= 1),
  PRIMARY KEY (resource, slot)
) ENGINE = InnoDB;

-- The event log: one row per decision (every accepted change, and every refusal with its reason) and per fenced write
-- (accepted with the mark it left, or refused with the mark that refused it), written in the request's own
-- transaction. id rises with every event (AUTO_INCREMENT, taken when it is written); seq counts one lease's events
-- (a resource's, or one slot's of its semaphore), so that each request prunes in constant work: the lease's event
-- that falls out of its newest keep_events, and of the log's two oldest events those older than events_max_age. seq
-- is not unique: two fenced writes of one lease, which share its row's lock, may number alike.
CREATE TABLE IF NOT EXISTS lease_machines_events (
  id                  BIGINT          NOT NULL AUTO_INCREMENT PRIMARY KEY,
  resource            VARBINARY(1024) NOT NULL,
  slot                INT             NOT NULL CHECK (slot BETWEEN 0 AND 1023),
  seq                 BIGINT          NOT NULL CHECK (seq >= 1),
  kind                VARCHAR(32)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  at                  DOUBLE          NOT NULL,
  owner               BIGINT          NULL, -- the lease's owner; for a refusal, who asked
  token               BIGINT          NULL, -- the lease's token; for a refusal or a fenced write, the one presented
  expires_at          DOUBLE          NULL,
  revision            BIGINT          NULL, -- the lease row's revision after an accepted change
  reason              VARCHAR(32)     CHARACTER SET ascii COLLATE ascii_bin NULL, -- why it was refused
  replaced_owner      BIGINT          NULL, -- the lease record an accepted change replaced (a takeover's expired one)
  replaced_token      BIGINT          NULL,
  replaced_expires_at DOUBLE          NULL,
  highest             BIGINT          NULL, -- a fenced write's mark: the one it left, or the one that refused it
  KEY lease_machines_events_lease (resource, slot, seq)
) ENGINE = InnoDB;
