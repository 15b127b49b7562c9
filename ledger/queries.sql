-- name: lock_ledger
SELECT pg_advisory_xact_lock(%(key)s);

-- name: existing_external_ids
-- Which of the (channel, external id) pairs are stored, and in which session. A batch's
-- columns travel as arrays in binary: the server reads them without parsing.
-- LATERAL ... LIMIT 1 keeps this a probe of the unique index per key, whatever the
-- table's statistics say (a hash join over the tenant's whole ledger is the alternative).
SELECT k.channel_id, k.external_id, hit.session_id
  FROM unnest(%(channel_ids)b::text[], %(external_ids)b::text[]) AS k (channel_id, external_id)
 CROSS JOIN LATERAL (
       SELECT e.session_id FROM memory_session_events e
        WHERE e.tenant_id = %(tenant_id)s AND e.channel_id = k.channel_id
          AND e.external_id = k.external_id
        LIMIT 1) AS hit;

-- name: open_sessions_for_update
SELECT id, channel_id, started_at, last_event_at, event_count, participants
  FROM memory_sessions
 WHERE tenant_id = %(tenant_id)s AND status = 'open'
   AND channel_id = ANY (%(channel_ids)b::text[])
   FOR UPDATE;

-- name: update_sessions
UPDATE memory_sessions s
   SET started_at = v.started_at, last_event_at = v.last_event_at,
       event_count = v.event_count,
       participants = ARRAY(SELECT json_array_elements_text(v.participants)),
       status = v.status, ended_at = v.ended_at, closed_at = v.closed_at,
       close_reason = v.close_reason, last_appended_at = %(now)s
  FROM json_to_recordset(%(sessions)s::json)
       AS v (id bigint, channel_id text, status text, started_at timestamptz,
             last_event_at timestamptz, ended_at timestamptz, closed_at timestamptz,
             close_reason text, event_count integer, participants json)
 WHERE s.tenant_id = %(tenant_id)s AND s.id = v.id;

-- name: insert_sessions_and_events
-- New sessions take their ids here. The events come as columns (arrays in binary, in the
-- order to store them), each with its session's id, seq and session start; an event of a
-- new session (session id null) names it by channel and start (unique among a batch's
-- new sessions) and takes its id from `created`. Returns the new sessions, then one row
-- (channel_id null) with the events' first and last ids and their count: appends are
-- serialized, so the ids of one statement are consecutive in insertion order, and when
-- they are not (last - first + 1 <> count) the caller reads them by external id
-- (event_ids).
WITH created AS (
    INSERT INTO memory_sessions
           (tenant_id, channel_id, status, started_at, last_event_at, ended_at,
            opened_at, last_appended_at, closed_at, close_reason, event_count, participants)
    SELECT %(tenant_id)s, v.channel_id, v.status, v.started_at, v.last_event_at, v.ended_at,
           %(now)s, %(now)s, v.closed_at, v.close_reason, v.event_count,
           ARRAY(SELECT json_array_elements_text(v.participants))
      FROM json_to_recordset(%(sessions)s::json)
           AS v (channel_id text, status text, started_at timestamptz,
                 last_event_at timestamptz, ended_at timestamptz, closed_at timestamptz,
                 close_reason text, event_count integer, participants json)
    RETURNING id, channel_id, started_at),
stored AS (
    INSERT INTO memory_session_events
           (tenant_id, session_id, channel_id, seq, role, actor_id, actor_name, content,
            occurred_at, utc_offset_minutes, recorded_at, external_id, metadata)
    SELECT %(tenant_id)s, coalesce(v.session_id, c.id), v.channel_id, v.seq, v.role,
           v.actor_id, v.actor_name, v.content, v.occurred_at, v.utc_offset, %(now)s,
           v.external_id, v.metadata::jsonb
      FROM unnest(%(session_ids)b::bigint[], %(seqs)b::integer[],
                  %(session_starts)b::timestamptz[], %(channel_ids)b::text[],
                  %(roles)b::text[], %(actor_ids)b::text[], %(actor_names)b::text[],
                  %(contents)b::text[], %(occurred_ats)b::timestamptz[],
                  %(utc_offsets)b::smallint[], %(external_ids)b::text[],
                  %(metadata)b::text[]) WITH ORDINALITY
           AS v (session_id, seq, session_start, channel_id, role, actor_id, actor_name,
                 content, occurred_at, utc_offset, external_id, metadata, n)
      LEFT JOIN created c
        ON v.session_id IS NULL AND c.channel_id = v.channel_id
       AND c.started_at = v.session_start
     ORDER BY v.n
    RETURNING id)
SELECT id, channel_id, started_at, NULL::bigint AS last_id, NULL::bigint AS n FROM created
UNION ALL
SELECT min(id), NULL, NULL, max(id), count(*) FROM stored;

-- name: event_ids
-- The ids of a batch's events by (channel, external id), in the transaction that stored
-- them.
SELECT k.channel_id, k.external_id, e.id
  FROM unnest(%(channel_ids)b::text[], %(external_ids)b::text[]) AS k (channel_id, external_id)
  JOIN memory_session_events e
    ON e.tenant_id = %(tenant_id)s AND e.channel_id = k.channel_id
   AND e.external_id = k.external_id;

-- name: close_sessions
-- Those of the sessions still open, closed explicitly now.
UPDATE memory_sessions
   SET status = 'closed', ended_at = last_event_at, closed_at = %(now)s,
       close_reason = 'explicit'
 WHERE tenant_id = %(tenant_id)s AND id = ANY(%(ids)s::bigint[]) AND status = 'open'
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
-- Idle on both clocks: no event within the gap by the events' own times, and no append
-- within it by the server's. Both are columns of the row, so a sweep that waits for an
-- append's lock re-checks them as that append left them.
UPDATE memory_sessions
   SET status = 'closed', ended_at = last_event_at, closed_at = %(now)s, close_reason = 'idle'
 WHERE status = 'open' AND last_event_at < %(cutoff)s
   AND coalesce(last_appended_at, '-infinity') < %(cutoff)s
   AND (%(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s)
RETURNING tenant_id, id;

-- name: events_after
SELECT * FROM memory_session_events
 WHERE id > %(after)s
 ORDER BY id
 LIMIT %(limit)s;

-- name: open_session_tail
-- The newest events of the channel's open session, newest first.
SELECT e.id, e.external_id, e.actor_id, e.actor_name, e.role, e.content, e.occurred_at,
       e.session_id
  FROM memory_sessions s
  JOIN memory_session_events e ON e.tenant_id = s.tenant_id AND e.session_id = s.id
 WHERE s.tenant_id = %(tenant_id)s AND s.channel_id = %(channel_id)s AND s.status = 'open'
 ORDER BY e.occurred_at DESC, e.seq DESC
 LIMIT %(limit)s;

-- name: open_session
SELECT id, event_count FROM memory_sessions
 WHERE tenant_id = %(tenant_id)s AND channel_id = %(channel_id)s AND status = 'open'
   AND (%(participant)s::text IS NULL OR %(participant)s = ANY (participants));
