-- Schema of LeaseMachines::Store on PostgreSQL (format 2). The store creates it on first use; apply it yourself
-- when you manage the schema with migrations. On open, the store checks the format row and every column's name and
-- type, and refuses tables of another shape (a foreign table of the same name, a newer format). Tokens and owners
-- are bigints (signed 64-bit): tokens above 2**63-1 are refused, owners above it are stored as their
-- two's-complement value. Times are Float seconds since the Unix epoch (double precision), exactly the Floats the
-- gem returns.

-- The schema's format, in one row: a store refuses a database whose format it does not know.
CREATE TABLE IF NOT EXISTS lease_machines_schema (
  id     integer PRIMARY KEY CHECK (id = 1),
  format integer NOT NULL
);
INSERT INTO lease_machines_schema (id, format) VALUES (1, 2) ON CONFLICT (id) DO NOTHING;

-- One row per resource: the authority's checkpoint.
CREATE TABLE IF NOT EXISTS lease_machines_leases (
  resource    text             PRIMARY KEY,
  owner       bigint,                                -- NULL when vacant
  token       bigint,                                -- NULL when vacant
  expires_at  double precision,                      -- NULL when vacant
  last_issued bigint,                                -- the token high-water; kept after release; NULL before any grant
  observed    double precision NOT NULL DEFAULT 0.0, -- the clock watermark
  revision    bigint           NOT NULL DEFAULT 0,   -- rises with every accepted change
  CHECK ((owner IS NULL) = (token IS NULL) AND (token IS NULL) = (expires_at IS NULL)),
  CHECK (token IS NULL OR (last_issued IS NOT NULL AND token BETWEEN 1 AND last_issued))
);

-- The token epoch the store issues in, and the server's history it was taken in: one row. Tokens of epoch E are above
-- E * 2**40 (the core's TokenEpoch). history is "SYSTEM_IDENTIFIER/TIMELINE" (pg_control_system(), and the timeline of
-- the WAL written now): a promoted standby or a point-in-time recovery writes a new timeline, a new cluster is
-- another system, and the first grant in a new history moves the epoch above every one the database used, so that a
-- token a failover lost is never issued again. A plain copy of the data directory started again is the same history:
-- set history to '' before its first grant (README, Failover).
CREATE TABLE IF NOT EXISTS lease_machines_history (
  id      integer PRIMARY KEY CHECK (id = 1),
  epoch   bigint  NOT NULL CHECK (epoch >= 0),
  history text    NOT NULL
);

-- One row per protected resource: the highest token its writes have carried.
CREATE TABLE IF NOT EXISTS lease_machines_fences (
  resource text   PRIMARY KEY,
  highest  bigint NOT NULL CHECK (highest >= 1)
);

-- The slots of a semaphore (acquire with limit: N) above slot 0, which is the resource's row above: one row per
-- resource and slot, each a lease of its own.
CREATE TABLE IF NOT EXISTS lease_machines_slots (
  resource    text             NOT NULL,
  slot        integer          NOT NULL CHECK (slot BETWEEN 1 AND 1023),
  owner       bigint,
  token       bigint,
  expires_at  double precision,
  last_issued bigint,
  observed    double precision NOT NULL DEFAULT 0.0,
  revision    bigint           NOT NULL DEFAULT 0,
  PRIMARY KEY (resource, slot),
  CHECK ((owner IS NULL) = (token IS NULL) AND (token IS NULL) = (expires_at IS NULL)),
  CHECK (token IS NULL OR (last_issued IS NOT NULL AND token BETWEEN 1 AND last_issued))
);

-- The fence of each slot above 0 (slot 0's is the resource's row above): the highest token its writes have carried.
CREATE TABLE IF NOT EXISTS lease_machines_slot_fences (
  resource text    NOT NULL,
  slot     integer NOT NULL CHECK (slot BETWEEN 1 AND 1023),
  highest  bigint  NOT NULL CHECK (highest >= 1),
  PRIMARY KEY (resource, slot)
);

-- The event log (since format 2): one row per decision (every accepted change, and every refusal with its reason)
-- and per fenced write (accepted with the mark it left, or refused with the mark that refused it), written in the
-- request's own transaction. id rises with every event, taken when it is written (per resource, decisions commit
-- in that order, their row's lock serializing them; a fenced write's event in a longer application transaction
-- may commit after greater ids); seq counts one lease's events (a resource's, or one slot's of its semaphore), so that each request prunes
-- in constant work: the lease's event that falls out of its newest keep_events, and the log's oldest ones older
-- than events_max_age. seq is not unique: two fenced writes of one lease, which share its row's lock, may number alike.
CREATE TABLE IF NOT EXISTS lease_machines_events (
  id                  bigint           GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  resource            text             NOT NULL,
  slot                integer          NOT NULL CHECK (slot BETWEEN 0 AND 1023),
  seq                 bigint           NOT NULL CHECK (seq >= 1),
  kind                text             NOT NULL,
  at                  double precision NOT NULL,
  owner               bigint,           -- the lease's owner; for a refusal, who asked
  token               bigint,           -- the lease's token; for a refusal or a fenced write, the one presented
  expires_at          double precision,
  revision            bigint,           -- the lease row's revision after an accepted change
  reason              text,             -- why a request or a write was refused
  replaced_owner      bigint,           -- the lease record an accepted change replaced (a takeover's expired one)
  replaced_token      bigint,
  replaced_expires_at double precision,
  highest             bigint            -- a fenced write's mark: the one it left, or the one that refused it
);
CREATE INDEX IF NOT EXISTS lease_machines_events_lease ON lease_machines_events (resource, slot, seq);

-- Logs one event, numbered after its lease's newest (seq), and prunes in constant work: the lease's event that falls
-- out of its newest keep_events (the one numbered keep_events before, found by the lease's index), and of the log's
-- two oldest events those more than max_age seconds before this one (which also takes, in time, what a lowered
-- keep_events left). Rows another transaction is pruning are skipped (SKIP LOCKED), so that no request waits for
-- another resource's. A function, so that each connection plans these
-- statements once (PL/pgSQL keeps their plans) where a request's own statements are planned every time; it keeps no
-- state of its own and decides nothing.
CREATE OR REPLACE FUNCTION lease_machines_log_event(
  event_resource text, event_slot integer, event_kind text, event_at double precision, event_owner bigint,
  event_token bigint, event_expires_at double precision, event_revision bigint, event_reason text,
  event_replaced_owner bigint, event_replaced_token bigint, event_replaced_expires_at double precision,
  event_highest bigint, keep_events bigint, max_age double precision
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  next_seq bigint;
BEGIN
  SELECT coalesce(max(seq), 0) + 1 INTO next_seq FROM lease_machines_events
  WHERE resource = event_resource AND slot = event_slot;
  INSERT INTO lease_machines_events (resource, slot, seq, kind, at, owner, token, expires_at, revision, reason,
    replaced_owner, replaced_token, replaced_expires_at, highest)
  VALUES (event_resource, event_slot, next_seq, event_kind, event_at, event_owner, event_token, event_expires_at,
    event_revision, event_reason, event_replaced_owner, event_replaced_token, event_replaced_expires_at,
    event_highest);
  -- The ids to prune are chosen first, then locked: only the rows to delete get a lock, and none that another
  -- transaction holds (SKIP LOCKED).
  DELETE FROM lease_machines_events WHERE id = ANY (ARRAY(
    SELECT id FROM lease_machines_events WHERE id = ANY (ARRAY(
      SELECT id FROM lease_machines_events
      WHERE resource = event_resource AND slot = event_slot AND seq = next_seq - keep_events
      UNION ALL
      SELECT oldest.id FROM (SELECT id, at FROM lease_machines_events ORDER BY id LIMIT 2) oldest
      WHERE oldest.at < event_at - max_age
    )) FOR UPDATE SKIP LOCKED
  ));
  RETURN next_seq;
END
$$;

-- Commits a decision made on a row the store knew without reading it (as its own last commit of the row left it, or
-- as this function's last answer found it), in one statement: a compare-and-set. The resource's row is locked, and
-- the decision is written (and its event logged) only if the row is still the one the decision was made on, column
-- for column; if its instant was carried from an earlier reading of the server's clock, no later than the clock now
-- and at most carried_within seconds before it; if it was made on no slot rows, none exist; and if it issued a token,
-- the token epoch it was made in is still the recorded one, in the same history, and that history is the server's
-- own as it is now (its system identifier and the timeline of the WAL it writes: "SYSTEM/TIMELINE"). Then it
-- answers no rows. Otherwise
-- nothing is written, and it answers the row as it is now (its doubles as float8send's bytes in hex; all NULL when the
-- row is gone), the server's clock read after the lock, whether the resource has no slot rows, and the token epoch
-- (as the store's decisions read it), for the store to decide again on. It compares and copies; it decides nothing.
-- A function, so that each connection plans its statements once. Optional: a store that finds it missing (a
-- database whose schema an earlier version made, opened with migrate: false) reads every row before deciding.
CREATE OR REPLACE FUNCTION lease_machines_commit_known(
  known_resource text, known_owner bigint, known_token bigint, known_expires_at double precision,
  known_last_issued bigint, known_observed double precision, known_revision bigint, known_no_slots boolean,
  carried_at double precision, carried_within double precision, issued_epoch bigint, issued_history text,
  written boolean, new_owner bigint, new_token bigint, new_expires_at double precision, new_last_issued bigint,
  new_observed double precision, new_revision bigint,
  event_kind text, event_at double precision, event_owner bigint, event_token bigint,
  event_expires_at double precision, event_revision bigint, event_reason text, event_replaced_owner bigint,
  event_replaced_token bigint, event_replaced_expires_at double precision, event_highest bigint,
  keep_events bigint, max_age double precision
) RETURNS TABLE (
  row_owner bigint, row_token bigint, row_expires_at text, row_last_issued bigint, row_observed text,
  row_revision bigint, clock text, no_slots boolean, epoch bigint, history text, timeline bigint
) LANGUAGE plpgsql AS $$
DECLARE
  locked lease_machines_leases%ROWTYPE;
  now_seconds double precision;
BEGIN
  SELECT * INTO locked FROM lease_machines_leases l WHERE l.resource = known_resource FOR UPDATE;
  now_seconds := extract(epoch FROM clock_timestamp());
  IF FOUND
     AND (locked.owner, locked.token, locked.expires_at, locked.last_issued, locked.observed, locked.revision)
         IS NOT DISTINCT FROM
         (known_owner, known_token, known_expires_at, known_last_issued, known_observed, known_revision)
     AND (carried_at IS NULL OR (carried_at <= now_seconds AND carried_at >= now_seconds - carried_within))
     AND (NOT known_no_slots OR NOT EXISTS (SELECT 1 FROM lease_machines_slots s WHERE s.resource = known_resource))
     AND (issued_epoch IS NULL OR (EXISTS (SELECT 1 FROM lease_machines_history h
                                           WHERE h.id = 1 AND h.epoch = issued_epoch AND h.history = issued_history)
                                   AND issued_history = (SELECT system_identifier::text FROM pg_control_system())
                                                        || '/' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)))
  THEN
    IF written THEN
      UPDATE lease_machines_leases l SET owner = new_owner, token = new_token, expires_at = new_expires_at,
        last_issued = new_last_issued, observed = new_observed, revision = new_revision
      WHERE l.resource = known_resource;
    END IF;
    PERFORM lease_machines_log_event(known_resource, 0, event_kind, event_at, event_owner, event_token,
      event_expires_at, event_revision, event_reason, event_replaced_owner, event_replaced_token,
      event_replaced_expires_at, event_highest, keep_events, max_age);
    RETURN;
  END IF;
  RETURN QUERY SELECT locked.owner, locked.token, encode(float8send(locked.expires_at), 'hex'), locked.last_issued,
    encode(float8send(locked.observed), 'hex'), locked.revision, encode(float8send(now_seconds), 'hex'),
    NOT EXISTS (SELECT 1 FROM lease_machines_slots s WHERE s.resource = known_resource), h.epoch, h.history,
    ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint
    FROM (SELECT 1) one LEFT JOIN lease_machines_history h ON h.id = 1;
END
$$;

-- A format 1 database (before the event log) has just been given the log above: its format is raised.
UPDATE lease_machines_schema SET format = 2 WHERE id = 1 AND format = 1;
