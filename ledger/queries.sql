-- name: lock_ledger
SELECT pg_advisory_xact_lock(%(key)s);

-- name: existing_external_ids
-- LATERAL ... LIMIT 1 keeps this a probe of the unique index per key, whatever the
-- table's statistics say (a hash join over the tenant's whole ledger is the alternative).
SELECT k.channel_id, k.external_id
  FROM unnest(%(channel_ids)s::text[], %(external_ids)s::text[]) AS k (channel_id, external_id)
 CROSS JOIN LATERAL (
       SELECT 1 FROM memory_session_events e
        WHERE e.tenant_id = %(tenant_id)s AND e.channel_id = k.channel_id
          AND e.external_id = k.external_id
        LIMIT 1) AS hit;

-- name: open_sessions_for_update
SELECT id, channel_id, started_at, last_event_at, event_count, participants
  FROM memory_sessions
 WHERE tenant_id = %(tenant_id)s AND status = 'open' AND channel_id = ANY(%(channel_ids)s)
   FOR UPDATE;

-- name: next_session_ids
SELECT nextval(pg_get_serial_sequence('memory_sessions', 'id')) AS id
  FROM generate_series(1, %(n)s);

-- name: insert_session
INSERT INTO memory_sessions
       (tenant_id, id, channel_id, status, started_at, last_event_at, ended_at,
        opened_at, closed_at, close_reason, event_count, participants)
OVERRIDING SYSTEM VALUE
VALUES (%(tenant_id)s, %(id)s, %(channel_id)s, %(status)s, %(started_at)s, %(last_event_at)s,
        %(ended_at)s, %(now)s, %(closed_at)s, %(close_reason)s, %(event_count)s,
        %(participants)s);

-- name: update_open_session
UPDATE memory_sessions
   SET started_at = %(started_at)s,
       last_event_at = %(last_event_at)s,
       event_count = %(event_count)s,
       participants = %(participants)s,
       status = %(status)s,
       ended_at = %(ended_at)s,
       closed_at = %(closed_at)s,
       close_reason = %(close_reason)s
 WHERE tenant_id = %(tenant_id)s AND id = %(id)s;

-- name: create_event_stage
-- Per-connection staging table: COPY is not allowed into a table under row-level
-- security, so a batch is copied here and moved with one INSERT that RLS checks.
CREATE TEMP TABLE IF NOT EXISTS ledger_event_stage (
    session_id bigint, channel_id text, seq integer, role text, actor_id text,
    actor_name text, content text, occurred_at timestamptz, external_id text, metadata jsonb
) ON COMMIT DELETE ROWS;

-- name: copy_event_stage
COPY ledger_event_stage (session_id, channel_id, seq, role, actor_id, actor_name, content,
                         occurred_at, external_id, metadata) FROM STDIN;

-- name: insert_events
INSERT INTO memory_session_events
       (tenant_id, session_id, channel_id, seq, role, actor_id, actor_name, content,
        occurred_at, recorded_at, external_id, metadata)
SELECT %(tenant_id)s, session_id, channel_id, seq, role, actor_id, actor_name, content,
       occurred_at, %(now)s, external_id, metadata
  FROM ledger_event_stage;

-- name: clear_event_stage
TRUNCATE ledger_event_stage;

-- name: close_session
UPDATE memory_sessions
   SET status = 'closed', ended_at = last_event_at, closed_at = %(now)s,
       close_reason = %(reason)s
 WHERE tenant_id = %(tenant_id)s AND id = %(id)s AND status = 'open'
RETURNING id;

-- name: get_session
SELECT * FROM memory_sessions WHERE tenant_id = %(tenant_id)s AND id = %(id)s;

-- name: list_sessions
SELECT * FROM memory_sessions
 WHERE tenant_id = %(tenant_id)s
   AND (%(channel_id)s::text IS NULL OR channel_id = %(channel_id)s)
 ORDER BY channel_id, started_at, id
 LIMIT %(limit)s;

-- name: session_events
SELECT * FROM memory_session_events
 WHERE tenant_id = %(tenant_id)s AND session_id = %(session_id)s
 ORDER BY occurred_at, seq;

-- name: sweep_idle
UPDATE memory_sessions
   SET status = 'closed', ended_at = last_event_at, closed_at = %(now)s, close_reason = 'idle'
 WHERE status = 'open' AND last_event_at < %(cutoff)s
   AND (%(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s)
RETURNING tenant_id, id;

-- name: events_after
SELECT * FROM memory_session_events
 WHERE id > %(after)s
 ORDER BY id
 LIMIT %(limit)s;
