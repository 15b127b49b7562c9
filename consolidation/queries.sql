-- Consolidation: maintenance jobs over memory entries and the ledger (see docs/consolidation.md).

------------------------------------------------------------------------------ runs
-- name: try_lock
-- Session-level: held for the whole run (many transactions), released by unlock or when
-- the connection ends.
SELECT pg_try_advisory_lock(%(key)s) AS locked;

-- name: unlock
SELECT pg_advisory_unlock(%(key)s) AS unlocked;

-- name: claim_run
-- At most one run per (tenant, job, window): a second scheduler gets no row back.
INSERT INTO consolidation_runs (tenant_id, job, window_start, window_end, started_at)
VALUES (%(tenant_id)s, %(job)s, %(window_start)s, %(window_end)s, %(started_at)s)
ON CONFLICT (tenant_id, job, window_start) DO NOTHING
RETURNING id;

-- name: finish_run
UPDATE consolidation_runs
   SET finished_at = %(finished_at)s, stats = %(stats)s, error = %(error)s
 WHERE tenant_id = %(tenant_id)s AND id = %(id)s;

-- name: recent_runs
SELECT tenant_id, id, job, window_start, window_end, started_at, finished_at, stats, error
  FROM consolidation_runs
 WHERE (%(job)s::text IS NULL OR job = %(job)s)
 ORDER BY started_at DESC, id DESC
 LIMIT %(limit)s;

------------------------------------------------------------------------------ checkpoints
------------------------------------------------------------------------------ tenants and owners
-- name: entry_tenants
-- Tenants with entries: a loose index scan over the primary key (tenant_id, id).
WITH RECURSIVE t AS (
    (SELECT tenant_id FROM memory_entries ORDER BY tenant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT e.tenant_id FROM memory_entries e
             WHERE e.tenant_id > t.tenant_id ORDER BY e.tenant_id LIMIT 1)
      FROM t WHERE t.tenant_id IS NOT NULL)
SELECT tenant_id FROM t WHERE tenant_id IS NOT NULL ORDER BY 1;

-- name: session_tenants
WITH RECURSIVE t AS (
    (SELECT tenant_id FROM memory_sessions ORDER BY tenant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT s.tenant_id FROM memory_sessions s
             WHERE s.tenant_id > t.tenant_id ORDER BY s.tenant_id LIMIT 1)
      FROM t WHERE t.tenant_id IS NOT NULL)
SELECT tenant_id FROM t WHERE tenant_id IS NOT NULL ORDER BY 1;

-- name: history_tenants_behind
-- Tenants whose entry history runs past a consumer's checkpoint (up to the horizon); the
-- entry jobs leave consolidation's own changes out (all_actors false), as changed_owners.
WITH RECURSIVE t AS (
    (SELECT tenant_id FROM memory_entry_history ORDER BY tenant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT h.tenant_id FROM memory_entry_history h
             WHERE h.tenant_id > t.tenant_id ORDER BY h.tenant_id LIMIT 1)
      FROM t WHERE t.tenant_id IS NOT NULL)
SELECT t.tenant_id FROM t
 WHERE t.tenant_id IS NOT NULL
   AND (%(tenant_id)s::text IS NULL OR t.tenant_id = %(tenant_id)s)
   AND EXISTS (
       SELECT 1 FROM memory_entry_history h
        WHERE h.tenant_id = t.tenant_id AND h.id <= %(upto)s
          AND (%(all_actors)s OR h.actor NOT LIKE 'consolidation:%%')
          AND h.id > COALESCE((SELECT c.position FROM consumer_checkpoint c
                                WHERE c.tenant_id = t.tenant_id
                                  AND c.consumer = %(consumer)s), 0))
 ORDER BY 1;

-- name: owners_with_kinds
-- Every owner with entries of the given kinds (NULL: any), for a full pass.
SELECT DISTINCT owner_type, owner_id, 0::bigint AS first_change
  FROM memory_entries
 WHERE tenant_id = %(tenant_id)s
   AND (%(kinds)s::text[] IS NULL OR kind = ANY (%(kinds)s))
   AND kind <> ALL (%(skip_kinds)s::text[])
 ORDER BY owner_type, owner_id;

-- name: owners_changed
-- Owners whose entries changed in (after, upto], with their first change id. Changes made
-- by consolidation jobs are left out: none of them gives an entry job new work (each job
-- is a fixed point, and none adds an active entry or a new value).
SELECT e.owner_type, e.owner_id, min(h.id) AS first_change
  FROM memory_entry_history h
  JOIN memory_entries e ON e.tenant_id = h.tenant_id AND e.id = h.entry_id
 WHERE h.tenant_id = %(tenant_id)s AND h.id > %(after)s AND h.id <= %(upto)s
   AND h.actor NOT LIKE 'consolidation:%%'
   AND (%(kinds)s::text[] IS NULL OR e.kind = ANY (%(kinds)s))
   AND e.kind <> ALL (%(skip_kinds)s::text[])
 GROUP BY e.owner_type, e.owner_id
 ORDER BY e.owner_type, e.owner_id;

-- name: owners_changed_by_others
-- Owners whose entries of the given kinds changed in (after, upto] by anyone but one
-- actor, with their first change id: the digest job follows consolidation's own changes
-- too (a merge or a supersession changes an owner's facts), but not its own.
SELECT e.owner_type, e.owner_id, min(h.id) AS first_change
  FROM memory_entry_history h
  JOIN memory_entries e ON e.tenant_id = h.tenant_id AND e.id = h.entry_id
 WHERE h.tenant_id = %(tenant_id)s AND h.id > %(after)s AND h.id <= %(upto)s
   AND h.actor <> %(actor)s AND e.kind = ANY (%(kinds)s)
 GROUP BY e.owner_type, e.owner_id
 ORDER BY e.owner_type, e.owner_id;

-- name: owners_over_cap
-- Every owner with more active entries than the cap, for a full pass of caps.
SELECT owner_type, owner_id, 0::bigint AS first_change
  FROM memory_entries
 WHERE tenant_id = %(tenant_id)s AND status = 'active'
 GROUP BY owner_type, owner_id
HAVING count(*) > %(cap)s
 ORDER BY owner_type, owner_id;

-- name: which_over_cap
-- Of the given owners, those with more active entries than the cap.
SELECT e.owner_type, e.owner_id
  FROM memory_entries e
  JOIN unnest(%(owner_types)s::text[], %(owner_ids)s::text[]) AS o(owner_type, owner_id)
    ON e.owner_type = o.owner_type AND e.owner_id = o.owner_id
 WHERE e.tenant_id = %(tenant_id)s AND e.status = 'active'
 GROUP BY e.owner_type, e.owner_id
HAVING count(*) > %(cap)s;

------------------------------------------------------------------------------ entries
-- name: owner_entries
-- The owners' entries in the given statuses and kinds (NULL: any; never skip_kinds), in id
-- order: store.lock_entries adds FOR UPDATE OF e (one lock order for every job, so jobs
-- never deadlock each other).
SELECT e.id, e.owner_type, e.owner_id, e.kind, e.key, e.canonical_statement, e.fields,
       e.confidence, e.importance, e.status, e.valid_from, e.valid_to, e.recorded_at,
       e.expired_at, e.superseded_by, e.access_count, e.last_accessed_at,
       e.source_event_ids, e.source_external_ids,
       CASE WHEN %(vectors)s THEN e.embedding END AS embedding,
       CASE WHEN %(vectors)s THEN e.embedding_model END AS embedding_model
  FROM memory_entries e
  JOIN unnest(%(owner_types)s::text[], %(owner_ids)s::text[]) AS o(owner_type, owner_id)
    ON e.owner_type = o.owner_type AND e.owner_id = o.owner_id
 WHERE e.tenant_id = %(tenant_id)s AND e.status = ANY (%(statuses)s)
   AND (%(kinds)s::text[] IS NULL OR e.kind = ANY (%(kinds)s))
   AND e.kind <> ALL (%(skip_kinds)s::text[])
 ORDER BY e.id;

-- name: decay_candidates
-- Entries that decay: active, of a kind that decays, rarely used, idle past the cutoff, and
-- scoring below the threshold (consolidation/decay.py's formula, with a little slack for
-- rounding). The policy decides; this only spares it reading the entries that stay.
SELECT id, owner_type, owner_id, kind, key, canonical_statement, fields, confidence,
       importance, status, valid_from, valid_to, recorded_at, expired_at, superseded_by,
       access_count, last_accessed_at, source_event_ids, source_external_ids, updated_at
  FROM memory_entries
 WHERE tenant_id = %(tenant_id)s AND status = 'active'
   AND kind <> ALL (%(exempt)s::text[])
   AND access_count < %(min_accesses)s
   AND recorded_at < %(cutoff)s
   AND (last_accessed_at IS NULL OR last_accessed_at < %(cutoff)s)
   AND (0.4 * importance + 0.3 * confidence
        + 0.3 * least(1.0, ln(1 + greatest(access_count, 0)) / ln(11)))
       -- at most 1,000 half-lives: beyond, 0.5^x leaves double precision (an error here)
       * power(0.5, least(1000, (extract(epoch FROM %(cutoff)s::timestamptz
                          - greatest(recorded_at, COALESCE(last_accessed_at, recorded_at)))
                   / 86400.0) / %(half_life_days)s))
       < %(threshold)s * 1.001
 ORDER BY id;

-- name: archive_unchanged
-- Archive the entries still as the policy saw them (same access count and update time):
-- one that was used or rewritten meanwhile is left for the next run.
UPDATE memory_entries e
   SET status = 'archived', expired_at = COALESCE(e.expired_at, %(now)s), updated_at = %(now)s
  FROM unnest(%(ids)s::bigint[], %(access_counts)s::int[], %(updated_ats)s::timestamptz[])
       AS u(id, access_count, updated_at)
 WHERE e.tenant_id = %(tenant_id)s AND e.id = u.id AND e.status = 'active'
   AND e.access_count = u.access_count AND e.updated_at = u.updated_at
RETURNING e.id;

-- name: update_entry_states
-- New states of changed entries (parallel arrays). Provenance comes as text ('{1,2}') and
-- external ids as JSON arrays: PostgreSQL arrays cannot be ragged.
UPDATE memory_entries e
   SET status = u.status, valid_to = u.valid_to, expired_at = u.expired_at,
       superseded_by = u.superseded_by, confidence = u.confidence,
       importance = u.importance, access_count = u.access_count,
       last_accessed_at = u.last_accessed_at,
       source_event_ids = u.source_event_ids::bigint[],
       source_external_ids = ARRAY(SELECT jsonb_array_elements_text(u.source_external_ids)),
       updated_at = %(now)s
  FROM unnest(%(id)s::bigint[], %(status)s::text[], %(valid_to)s::timestamptz[],
              %(expired_at)s::timestamptz[], %(superseded_by)s::bigint[],
              %(confidence)s::real[], %(importance)s::real[], %(access_count)s::int[],
              %(last_accessed_at)s::timestamptz[], %(source_event_ids)s::text[],
              %(source_external_ids)s::jsonb[])
       AS u(id, status, valid_to, expired_at, superseded_by, confidence, importance,
            access_count, last_accessed_at, source_event_ids, source_external_ids)
 WHERE e.tenant_id = %(tenant_id)s AND e.id = u.id;

-- name: insert_entry_links
-- Entry → entry lineage: supersedes (newer → older), merged_into (merged → survivor).
INSERT INTO memory_links (tenant_id, src_type, src_id, relation, dst_type, dst_id, created_at)
SELECT %(tenant_id)s, 'entry', l.src_id, l.relation, 'entry', l.dst_id::text, %(now)s
  FROM unnest(%(src_id)s::bigint[], %(relation)s::text[], %(dst_id)s::bigint[])
       AS l(src_id, relation, dst_id)
    ON CONFLICT DO NOTHING;

-- name: delete_stale_supersedes
-- A re-pointed supersession: the older entry's previous 'supersedes' links go.
DELETE FROM memory_links l
 USING unnest(%(old)s::bigint[], %(new)s::bigint[]) AS s(old, new)
 WHERE l.tenant_id = %(tenant_id)s AND l.src_type = 'entry' AND l.relation = 'supersedes'
   AND l.dst_type = 'entry' AND l.dst_id = s.old::text AND l.src_id <> s.new;

------------------------------------------------------------------------------ sweep
-- name: count_outbox
-- Sessions waiting in the build outbox: closed, or failed under the attempt limit, and
-- not handed to the queue.
SELECT count(*) AS n FROM memory_sessions
 WHERE build_queued_at IS NULL
   AND (status = 'closed' OR (status = 'failed' AND build_attempts < %(max_attempts)s))
   AND (%(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s);

-- name: expire_idempotency_keys
-- Idempotency keys older than the cutoff: a retry after that long writes again.
DELETE FROM api_idempotency_keys
 WHERE created_at < %(before)s
   AND (%(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s);

------------------------------------------------------------------------------ retention
-- name: retention_doomed
-- The tenant's sessions closed before the cutoff, locked (a build in flight finishes
-- first, and none starts until the deletion commits, so no session turns built between
-- this read and the deletion), with what goes with them; retention deletes the built and
-- failed ones.
SELECT s.id, s.status, s.event_count,
       ARRAY(SELECT o.id FROM memory_observations o
              WHERE o.tenant_id = s.tenant_id AND o.session_id = s.id) AS observation_ids
  FROM memory_sessions s
 WHERE s.tenant_id = %(tenant_id)s AND s.status <> 'open' AND s.closed_at < %(before)s
 ORDER BY s.id
   FOR UPDATE OF s;

-- name: retention_delete
SELECT memledger_retention_delete(%(tenant_id)s, %(before)s) AS sessions;

-- name: entries_of_sessions
SELECT count(*) AS n FROM memory_entries
 WHERE tenant_id = %(tenant_id)s AND source_session_id = ANY (%(ids)s::bigint[]);

-- name: delete_observation_links
DELETE FROM memory_links
 WHERE tenant_id = %(tenant_id)s AND src_type = 'observation'
   AND src_id = ANY (%(ids)s::bigint[]);

-- name: delete_orphan_links
-- Observation links whose observation no longer exists (full pass).
DELETE FROM memory_links l
 WHERE l.tenant_id = %(tenant_id)s AND l.src_type = 'observation'
   AND NOT EXISTS (SELECT 1 FROM memory_observations o
                    WHERE o.tenant_id = l.tenant_id AND o.id = l.src_id);

------------------------------------------------------------------------------ history
-- name: entry_row
SELECT id, owner_type, owner_id, kind, key, canonical_statement, status, confidence,
       valid_from, valid_to, recorded_at, expired_at, superseded_by, source_session_id,
       source_event_ids, source_external_ids
  FROM memory_entries
 WHERE tenant_id = %(tenant_id)s AND id = %(id)s;

-- name: entry_changes
SELECT id, action, old_statement, new_statement, old_status, new_status, actor, reason, at
  FROM memory_entry_history
 WHERE tenant_id = %(tenant_id)s AND entry_id = %(id)s
 ORDER BY id;

-- name: entry_links
-- Entry → entry lineage in either direction.
SELECT src_id, relation, dst_id::bigint AS dst_id, created_at
  FROM memory_links
 WHERE tenant_id = %(tenant_id)s AND src_type = 'entry' AND dst_type = 'entry'
   AND (src_id = %(id)s OR dst_id = %(id)s::text)
 ORDER BY created_at, src_id, dst_id;

-- name: owner_digests
-- The owners' active and deleted digests, each with the ids of the facts it collects.
SELECT d.id, d.owner_type, d.owner_id, d.status,
       ARRAY(SELECT l.dst_id::bigint FROM memory_links l
              WHERE l.tenant_id = d.tenant_id AND l.src_type = 'entry' AND l.src_id = d.id
                AND l.relation = 'collects' ORDER BY 1) AS facts
  FROM memory_entries d
  JOIN unnest(%(owner_types)s::text[], %(owner_ids)s::text[]) AS o(owner_type, owner_id)
    ON d.owner_type = o.owner_type AND d.owner_id = o.owner_id
 WHERE d.tenant_id = %(tenant_id)s AND d.kind = 'digest' AND d.status IN ('active', 'deleted')
 ORDER BY d.id;

-- name: insert_digests
-- New digests (no session of their own: their facts come from several), in order.
INSERT INTO memory_entries
       (tenant_id, owner_type, owner_id, kind, key, canonical_statement, fields, embedding,
        embedding_model, confidence, importance, valid_from, recorded_at, source_event_ids,
        source_external_ids, updated_at)
SELECT %(tenant_id)s, d.owner_type, d.owner_id, 'digest', d.key, d.statement, d.fields,
       d.embedding, %(embedding_model)s, d.confidence, d.importance, d.valid_from, %(now)s,
       d.source_event_ids::bigint[], ARRAY(SELECT jsonb_array_elements_text(d.source_external_ids)),
       %(now)s
  FROM unnest(%(owner_type)s::text[], %(owner_id)s::text[], %(key)s::text[],
              %(statement)s::text[], %(fields)s::jsonb[], %(embedding)b::vector[]::halfvec[],
              %(confidence)s::real[], %(importance)s::real[], %(valid_from)s::timestamptz[],
              %(source_event_ids)s::text[], %(source_external_ids)s::jsonb[])
       WITH ORDINALITY AS d(owner_type, owner_id, key, statement, fields, embedding,
                            confidence, importance, valid_from, source_event_ids,
                            source_external_ids, n)
 ORDER BY d.n
RETURNING id;

-- name: owners_to_index
-- The owners holding at least %(min)s active entries of an indexed model, with their
-- count: users and agents, and as 'participant' each user the channel entries name (a
-- channel's entries are searched by participant, not by owner).
WITH owned AS (
    SELECT tenant_id, owner_type, owner_id, embedding_model
      FROM memory_entries
     WHERE status = 'active' AND embedding_model = ANY(%(models)s)
       AND owner_type IN ('user', 'agent')
       AND (%(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s)
    UNION ALL
    SELECT e.tenant_id, 'participant', p, e.embedding_model
      FROM memory_entries e, jsonb_array_elements_text(e.fields -> 'participant_ids') AS p
     WHERE e.status = 'active' AND e.embedding_model = ANY(%(models)s)
       AND e.owner_type = 'channel' AND jsonb_typeof(e.fields -> 'participant_ids') = 'array'
       AND (%(tenant_id)s::text IS NULL OR e.tenant_id = %(tenant_id)s)
)
SELECT tenant_id, owner_type, owner_id, embedding_model, count(*) AS n
  FROM owned
 GROUP BY tenant_id, owner_type, owner_id, embedding_model
HAVING count(*) >= %(min)s;

-- name: learners_to_index
-- The pairs of an agent and a user where what the agent learnt from that user or alone
-- (learnt_from IN (user, '')) holds at least %(min)s active entries of an indexed model.
WITH learnt AS (
    SELECT tenant_id, owner_id, learnt_from, embedding_model, count(*) AS n
      FROM memory_entries
     WHERE status = 'active' AND embedding_model = ANY(%(models)s)
       AND owner_type = 'agent' AND learnt_from IS NOT NULL
       AND (%(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s)
     GROUP BY tenant_id, owner_id, learnt_from, embedding_model
)
SELECT u.tenant_id, u.owner_id, u.learnt_from, u.embedding_model,
       u.n + coalesce(a.n, 0) AS n
  FROM learnt u
  LEFT JOIN learnt a ON a.tenant_id = u.tenant_id AND a.owner_id = u.owner_id
                    AND a.embedding_model = u.embedding_model AND a.learnt_from = ''
 WHERE u.learnt_from <> '' AND u.n + coalesce(a.n, 0) >= %(min)s;

-- name: owner_indexes
-- The per-owner indexes there are, whether each is ready (a concurrent build that failed
-- leaves an invalid one), and the owner each names in its comment.
SELECT c.relname AS name, x.indisvalid AS valid, obj_description(c.oid, 'pg_class') AS comment
  FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
 WHERE x.indrelid = 'memory_entries'::regclass AND c.relname LIKE %(prefix)s
 ORDER BY c.relname;
