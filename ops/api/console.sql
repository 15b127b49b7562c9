-- The operator console's reads. Every one runs inside tenant_scope: row-level security
-- keeps another tenant's rows out whatever the ids asked for.

-- name: console_key
-- The key a console session was opened with, while it is not revoked.
SELECT tenant_id, id, name, scopes FROM api_keys
 WHERE id = %(key_id)s AND tenant_id = %(tenant_id)s AND revoked_at IS NULL;

-- name: console_users
-- The tenant's users: who has entries, with how many are active and the latest.
SELECT owner_id AS user_id,
       count(*) FILTER (WHERE status = 'active') AS active,
       count(*) AS entries,
       max(valid_from) AS latest
  FROM memory_entries
 WHERE tenant_id = %(tenant_id)s AND owner_type = 'user'
 GROUP BY owner_id
 ORDER BY owner_id
 LIMIT 1000;

-- name: console_entries
SELECT id, owner_type, owner_id, kind, key, canonical_statement, status, valid_from,
       recorded_at, confidence
  FROM memory_entries
 WHERE tenant_id = %(tenant_id)s
   AND (%(owner)s::text IS NULL OR owner_id = %(owner)s)
   AND (%(kind)s::text IS NULL OR kind = %(kind)s)
   AND (%(status)s::text IS NULL OR status = %(status)s)
   AND (%(since)s::timestamptz IS NULL OR valid_from >= %(since)s)
   AND (%(until)s::timestamptz IS NULL OR valid_from < %(until)s)
 ORDER BY valid_from DESC, id DESC
 LIMIT %(limit)s;

-- name: console_events
-- The ledger events an entry came from.
SELECT id, session_id, channel_id, seq, role, actor_id, actor_name, content, occurred_at,
       external_id
  FROM memory_session_events
 WHERE tenant_id = %(tenant_id)s AND id = ANY (%(ids)s)
 ORDER BY occurred_at, id;

-- name: console_sessions
SELECT id, channel_id, status, started_at, ended_at, event_count, build_attempts,
       last_error, build_version
  FROM memory_sessions
 WHERE tenant_id = %(tenant_id)s AND (%(status)s::text IS NULL OR status = %(status)s)
 ORDER BY started_at DESC, id DESC
 LIMIT 500;

-- name: console_session
SELECT id, status FROM memory_sessions WHERE tenant_id = %(tenant_id)s AND id = %(id)s;

-- name: console_runs
SELECT job, window_start, started_at, finished_at, stats, error
  FROM consolidation_runs
 WHERE tenant_id = %(tenant_id)s
 ORDER BY started_at DESC
 LIMIT 200;

-- name: console_retry
-- A failed session back to closed, its attempts forgotten: the next hand-over builds it.
UPDATE memory_sessions
   SET status = 'closed', build_attempts = 0, next_attempt_at = NULL, build_queued_at = NULL
 WHERE tenant_id = %(tenant_id)s AND id = %(id)s AND status = 'failed'
RETURNING id;
