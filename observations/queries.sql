-- name: lock_session
-- SKIP LOCKED: a session being built by another worker is left alone.
SELECT * FROM memory_sessions
 WHERE tenant_id = %(tenant_id)s AND id = %(session_id)s
   FOR UPDATE SKIP LOCKED;

-- name: session_exists
SELECT status FROM memory_sessions WHERE tenant_id = %(tenant_id)s AND id = %(session_id)s;

-- name: session_exists_row
SELECT * FROM memory_sessions WHERE tenant_id = %(tenant_id)s AND id = %(session_id)s;

-- name: session_events
SELECT id, seq, role, actor_id, actor_name, content, occurred_at, external_id, metadata
  FROM memory_session_events
 WHERE tenant_id = %(tenant_id)s AND session_id = %(session_id)s
 ORDER BY occurred_at, seq;

-- name: delete_observations
-- A rebuild replaces the session's observations, and their lineage links with them.
WITH gone AS (
    DELETE FROM memory_observations
     WHERE tenant_id = %(tenant_id)s AND session_id = %(session_id)s
    RETURNING id)
DELETE FROM memory_links l
 USING gone
 WHERE l.tenant_id = %(tenant_id)s AND l.src_type = 'observation' AND l.src_id = gone.id;

-- name: insert_observation
INSERT INTO memory_observations
       (tenant_id, session_id, build_version, owner_type, owner_id, key, kind, extractor,
        extractor_version, statement, confidence, importance, fields, source_event_ids,
        created_at)
VALUES (%(tenant_id)s, %(session_id)s, %(build_version)s, %(owner_type)s, %(owner_id)s,
        %(key)s, %(kind)s, %(extractor)s,
        %(extractor_version)s, %(statement)s, %(confidence)s, %(importance)s, %(fields)s,
        %(source_event_ids)s, %(now)s)
RETURNING id;

-- name: session_entries
SELECT id, owner_type, owner_id, key, canonical_statement, status
  FROM memory_entries
 WHERE tenant_id = %(tenant_id)s AND source_session_id = %(session_id)s
   AND status <> 'deleted';

-- name: insert_entry
INSERT INTO memory_entries
       (tenant_id, owner_type, owner_id, kind, key, canonical_statement, fields, embedding,
        embedding_model, confidence, importance, valid_from, recorded_at, source_session_id,
        source_event_ids, source_external_ids, updated_at)
VALUES (%(tenant_id)s, %(owner_type)s, %(owner_id)s, %(kind)s, %(key)s, %(statement)s,
        %(fields)s, %(embedding)s, %(embedding_model)s, %(confidence)s, %(importance)s,
        %(valid_from)s, %(now)s, %(session_id)s, %(source_event_ids)s,
        %(source_external_ids)s, %(now)s)
RETURNING id;

-- name: update_entry
UPDATE memory_entries
   SET kind = %(kind)s, canonical_statement = %(statement)s, fields = %(fields)s,
       embedding = %(embedding)s, embedding_model = %(embedding_model)s,
       confidence = %(confidence)s, importance = %(importance)s, valid_from = %(valid_from)s,
       source_event_ids = %(source_event_ids)s, source_external_ids = %(source_external_ids)s,
       updated_at = %(now)s
 WHERE tenant_id = %(tenant_id)s AND id = %(id)s;

-- name: delete_entry
UPDATE memory_entries
   SET status = 'deleted', expired_at = %(now)s, updated_at = %(now)s
 WHERE tenant_id = %(tenant_id)s AND id = %(id)s;

-- name: insert_history
INSERT INTO memory_entry_history
       (tenant_id, entry_id, action, old_statement, new_statement, old_status, new_status,
        actor, reason, at)
VALUES (%(tenant_id)s, %(entry_id)s, %(action)s, %(old_statement)s, %(new_statement)s,
        %(old_status)s, %(new_status)s, %(actor)s, %(reason)s, %(now)s);

-- name: insert_link
INSERT INTO memory_links (tenant_id, src_type, src_id, relation, dst_type, dst_id, created_at)
VALUES (%(tenant_id)s, %(src_type)s, %(src_id)s, %(relation)s, %(dst_type)s, %(dst_id)s,
        %(now)s)
ON CONFLICT DO NOTHING;

-- name: mark_built
UPDATE memory_sessions
   SET status = 'built', build_version = %(build_version)s, built_at = %(now)s,
       build_attempts = build_attempts + 1, last_error = %(fallback_reason)s,
       next_attempt_at = NULL, build_stats = %(stats)s
 WHERE tenant_id = %(tenant_id)s AND id = %(session_id)s;

-- name: mark_failed
UPDATE memory_sessions
   SET status = 'failed', build_attempts = build_attempts + 1, last_error = %(error)s,
       next_attempt_at = %(now)s + %(backoff)s * power(2, build_attempts)
 WHERE tenant_id = %(tenant_id)s AND id = %(session_id)s AND status IN ('closed', 'failed')
RETURNING build_attempts;

-- name: sessions_to_build
-- Closed sessions, and failed ones whose backoff has passed, across tenants.
SELECT tenant_id, id FROM memory_sessions
 WHERE status = 'closed'
    OR (status = 'failed' AND next_attempt_at <= %(now)s AND build_attempts < %(max_attempts)s)
 ORDER BY id
 LIMIT %(limit)s;

-- name: list_entries
SELECT * FROM memory_entries
 WHERE tenant_id = %(tenant_id)s
   AND (%(owner_id)s::text IS NULL OR owner_id = %(owner_id)s)
   AND (%(kind)s::text IS NULL OR kind = %(kind)s)
   AND status = 'active'
 ORDER BY valid_from, id
 LIMIT %(limit)s;

-- name: count_waiting_builds
SELECT count(*) AS n FROM memory_sessions WHERE status = 'closed';
