-- name: lock_session
-- SKIP LOCKED: a session being built by another worker is left alone.
SELECT * FROM memory_sessions
 WHERE tenant_id = %(tenant_id)s AND id = %(session_id)s
   FOR UPDATE SKIP LOCKED;

-- name: claim_build
-- One builder per session, for the whole build (its two transactions and the extraction
-- between them): a session-level advisory lock on the tenant and session.
SELECT pg_try_advisory_lock(hashtextextended(%(tenant_id)s || '/' || %(session_id)s, 0))
       AS claimed;

-- name: release_build
SELECT pg_advisory_unlock(hashtextextended(%(tenant_id)s || '/' || %(session_id)s, 0));

-- name: session_exists_row
SELECT * FROM memory_sessions WHERE tenant_id = %(tenant_id)s AND id = %(session_id)s;

-- name: session_input_events
SELECT id, seq, role, actor_id, actor_name, content, occurred_at, utc_offset_minutes,
       external_id, metadata
  FROM memory_session_events
 WHERE tenant_id = %(tenant_id)s AND session_id = %(session_id)s
 ORDER BY occurred_at, seq;

-- name: earlier_build_queued
-- An earlier session of the channel handed to the build queue and not built yet.
SELECT 1 FROM memory_sessions
 WHERE tenant_id = %(tenant_id)s AND channel_id = %(channel_id)s
   AND started_at < %(started_at)s AND status = 'closed' AND build_queued_at IS NOT NULL
   AND id <> %(session_id)s
 LIMIT 1;

-- name: earlier_summaries
-- What the channel's latest 50 earlier sessions left for the ones after them, oldest first:
-- the days their summaries tied words to ("days": what "two days before the wedding"
-- counts from) and the relations named by their given name so far ("names").
SELECT latest.fields->'days' AS days, latest.fields->'names' AS names
  FROM (SELECT e.fields, s.started_at, s.id
          FROM memory_sessions s
          JOIN memory_entries e
            ON e.tenant_id = s.tenant_id AND e.owner_type = 'channel'
           AND e.owner_id = s.channel_id AND e.key = 'summary:' || s.id
         WHERE s.tenant_id = %(tenant_id)s AND s.channel_id = %(channel_id)s
           AND s.started_at < %(started_at)s AND e.status <> 'deleted'
         ORDER BY s.started_at DESC, s.id DESC
         LIMIT 50) AS latest
 ORDER BY latest.started_at, latest.id;

-- name: current_beliefs
-- What memory holds as current about each member before the session, of the kinds that
-- hold one value at a time (the profile's): the latest 20 of each, oldest first, from
-- this channel's sessions only (never another channel's, which the others in this one may
-- not have seen), never from the session itself (a rebuild). For an extractor that says
-- which of them a new fact ends.
SELECT m.owner_id, b.kind, b.key, b.canonical_statement AS statement
  FROM unnest(%(owner_ids)s::text[]) AS m(owner_id)
 CROSS JOIN LATERAL (
        SELECT e.kind, e.key, e.canonical_statement, e.valid_from, e.id
          FROM memory_entries e
          JOIN memory_sessions s
            ON s.tenant_id = e.tenant_id AND s.id = e.source_session_id
           AND s.channel_id = %(channel_id)s
         WHERE e.tenant_id = %(tenant_id)s AND e.owner_type = 'user'
           AND e.owner_id = m.owner_id AND e.status = 'active'
           AND e.kind = ANY(%(kinds)s::text[]) AND e.valid_from < %(started_at)s
           AND e.source_session_id <> %(session_id)s
         ORDER BY e.valid_from DESC, e.id DESC
         LIMIT 20) AS b
 ORDER BY m.owner_id, b.valid_from, b.id;

-- name: delete_observations
-- A rebuild replaces the session's observations, and their lineage links with them.
WITH gone AS (
    DELETE FROM memory_observations
     WHERE tenant_id = %(tenant_id)s AND session_id = %(session_id)s
    RETURNING id)
DELETE FROM memory_links l
 USING gone
 WHERE l.tenant_id = %(tenant_id)s AND l.src_type = 'observation' AND l.src_id = gone.id;

-- name: insert_observations
-- One row per gated item; the arrays are parallel (item order). Provenance arrays come as
-- text ('{1,2}') because PostgreSQL arrays cannot be ragged.
INSERT INTO memory_observations
       (tenant_id, session_id, build_version, owner_type, owner_id, key, kind, extractor,
        extractor_version, statement, confidence, importance, fields, source_event_ids,
        created_at)
SELECT %(tenant_id)s, %(session_id)s, %(build_version)s, i.owner_type, i.owner_id, i.key,
       i.kind, %(extractor)s, %(extractor_version)s, i.statement, i.confidence, i.importance,
       i.fields, i.source_event_ids::bigint[], %(now)s
  FROM unnest(%(owner_type)s::text[], %(owner_id)s::text[], %(key)s::text[], %(kind)s::text[],
              %(statement)s::text[], %(confidence)s::real[], %(importance)s::real[],
              %(fields)s::jsonb[], %(source_event_ids)s::text[])
       WITH ORDINALITY AS i(owner_type, owner_id, key, kind, statement, confidence, importance,
                            fields, source_event_ids, n)
 ORDER BY i.n
RETURNING id, owner_type, owner_id, key;

-- name: session_entries
-- The session's entries a new build replaces, and those it must leave as they are:
-- "curated" ones, changed by someone (an edit or a delete through the API) rather than by
-- the builder or consolidation. A rebuild neither rewrites nor revives those.
SELECT e.id, e.owner_type, e.owner_id, e.key, e.canonical_statement, e.status,
       e.source_event_ids, e.source_external_ids, c.curated
  FROM memory_entries e
 CROSS JOIN LATERAL (
       SELECT EXISTS (
              SELECT 1 FROM memory_entry_history h
               WHERE h.tenant_id = e.tenant_id AND h.entry_id = e.id
                 AND h.actor <> 'builder' AND h.actor NOT LIKE 'consolidation:%%')
              AS curated) AS c
 WHERE e.tenant_id = %(tenant_id)s AND e.source_session_id = %(session_id)s
   AND (e.status <> 'deleted' OR c.curated);

-- name: insert_entries
-- Vectors are sent binary (%(embedding)b): formatting floats as text costs ~0.25 ms each.
-- They travel as fp32 vectors and the server rounds them to the column's halfvec.
INSERT INTO memory_entries
       (tenant_id, owner_type, owner_id, kind, key, canonical_statement, fields, embedding,
        embedding_model, confidence, importance, valid_from, recorded_at, source_session_id,
        source_event_ids, source_external_ids, updated_at)
SELECT %(tenant_id)s, i.owner_type, i.owner_id, i.kind, i.key, i.statement, i.fields,
       i.embedding, %(embedding_model)s, i.confidence, i.importance, i.valid_from, %(now)s,
       %(session_id)s, i.source_event_ids::bigint[],
       ARRAY(SELECT jsonb_array_elements_text(i.source_external_ids)), %(now)s
  FROM unnest(%(owner_type)s::text[], %(owner_id)s::text[], %(key)s::text[], %(kind)s::text[],
              %(statement)s::text[], %(fields)s::jsonb[], %(embedding)b::vector[]::halfvec[],
              %(confidence)s::real[], %(importance)s::real[], %(valid_from)s::timestamptz[],
              %(source_event_ids)s::text[], %(source_external_ids)s::jsonb[])
       WITH ORDINALITY AS i(owner_type, owner_id, key, kind, statement, fields, embedding,
                            confidence, importance, valid_from, source_event_ids,
                            source_external_ids, n)
 ORDER BY i.n
RETURNING id, owner_type, owner_id, key;

-- name: update_entries
UPDATE memory_entries e
   SET kind = i.kind, canonical_statement = i.statement, fields = i.fields,
       embedding = i.embedding, embedding_model = %(embedding_model)s,
       confidence = i.confidence, importance = i.importance, valid_from = i.valid_from,
       source_event_ids = i.source_event_ids::bigint[],
       source_external_ids = ARRAY(SELECT jsonb_array_elements_text(i.source_external_ids)),
       -- a fact whose start moved past the end supersede gave it ends where it starts
       -- (supersede at build time then re-slots the timeline)
       valid_to = CASE WHEN e.valid_to < i.valid_from THEN i.valid_from ELSE e.valid_to END,
       updated_at = %(now)s
  FROM unnest(%(id)s::bigint[], %(kind)s::text[], %(statement)s::text[], %(fields)s::jsonb[],
              %(embedding)b::vector[]::halfvec[], %(confidence)s::real[], %(importance)s::real[],
              %(valid_from)s::timestamptz[], %(source_event_ids)s::text[],
              %(source_external_ids)s::jsonb[])
       AS i(id, kind, statement, fields, embedding, confidence, importance, valid_from,
            source_event_ids, source_external_ids)
 WHERE e.tenant_id = %(tenant_id)s AND e.id = i.id
   -- only what changes: each changed entry gets its history row, an unchanged one neither
   -- a row nor a new updated_at
   AND (e.kind, e.canonical_statement, e.fields, e.confidence, e.importance, e.valid_from,
        e.source_event_ids, e.embedding_model)
       IS DISTINCT FROM
       (i.kind, i.statement, i.fields, i.confidence, i.importance, i.valid_from,
        i.source_event_ids::bigint[], %(embedding_model)s)
RETURNING e.id;

-- name: delete_entries
UPDATE memory_entries
   SET status = 'deleted', expired_at = %(now)s, updated_at = %(now)s
 WHERE tenant_id = %(tenant_id)s AND id = ANY(%(ids)s::bigint[]);

-- name: revive_displaced
-- Entries merged into, or superseded by, entries a rebuild deleted (found through their
-- lineage links): back to the status they had before — active, or archived — as their
-- own sessions still say them, or as someone edited them (an edit is kept, not hidden
-- behind a deleted entry); their links to the deleted entries go. The next merge and
-- supersede runs weigh the revived anew.
WITH links AS (
    SELECT l.id AS link_id, l.src_id AS entry_id, 'merged' AS status,
           l.dst_id::bigint AS displaced_by
      FROM memory_links l
     WHERE l.tenant_id = %(tenant_id)s AND l.dst_type = 'entry'
       AND l.dst_id = ANY(%(ids)s::bigint[]::text[])
       AND l.relation = 'merged_into' AND l.src_type = 'entry'
    UNION ALL
    SELECT l.id, l.dst_id::bigint, 'superseded', l.src_id
      FROM memory_links l
     WHERE l.tenant_id = %(tenant_id)s AND l.src_type = 'entry'
       AND l.src_id = ANY(%(ids)s::bigint[])
       AND l.relation = 'supersedes' AND l.dst_type = 'entry'),
displaced AS (
    SELECT DISTINCT ON (e.id) e.id, e.status, e.canonical_statement, e.owner_type,
           e.owner_id, e.key, k.displaced_by,
           coalesce((SELECT h.old_status FROM memory_entry_history h
                      WHERE h.tenant_id = e.tenant_id AND h.entry_id = e.id
                        AND h.new_status = e.status AND h.old_status <> e.status
                      ORDER BY h.id DESC LIMIT 1), 'active') AS restored
      FROM links k
      JOIN memory_entries e ON e.tenant_id = %(tenant_id)s AND e.id = k.entry_id
     WHERE e.status = k.status
       AND (k.status = 'merged' OR e.superseded_by = k.displaced_by)
     ORDER BY e.id, k.displaced_by),
revived AS (
    UPDATE memory_entries e
       SET status = d.restored, superseded_by = NULL,
           expired_at = CASE WHEN d.restored = 'active' THEN NULL ELSE e.expired_at END,
           valid_to = CASE WHEN d.status = 'superseded' THEN NULL ELSE e.valid_to END,
           updated_at = %(now)s
      FROM displaced d
     WHERE e.tenant_id = %(tenant_id)s AND e.id = d.id AND e.status = d.status
    RETURNING e.id),
unlinked AS (
    DELETE FROM memory_links l
     USING links k
     WHERE l.tenant_id = %(tenant_id)s AND l.id = k.link_id
       AND k.entry_id IN (SELECT id FROM revived))
SELECT d.id, d.status AS old_status, d.restored AS new_status, d.canonical_statement,
       d.displaced_by, d.owner_type, d.owner_id, d.key
  FROM displaced d JOIN revived r ON r.id = d.id
 ORDER BY d.id;

-- name: insert_history
INSERT INTO memory_entry_history
       (tenant_id, entry_id, action, old_statement, new_statement, old_status, new_status,
        actor, reason, at)
SELECT %(tenant_id)s, h.entry_id, h.action, h.old_statement, h.new_statement, h.old_status,
       h.new_status, %(actor)s, h.reason, %(now)s
  FROM unnest(%(entry_id)s::bigint[], %(action)s::text[], %(old_statement)s::text[],
              %(new_statement)s::text[], %(old_status)s::text[], %(new_status)s::text[],
              %(reason)s::text[]) WITH ORDINALITY
       AS h(entry_id, action, old_statement, new_statement, old_status, new_status, reason, n)
 ORDER BY h.n;

-- name: insert_links
INSERT INTO memory_links (tenant_id, src_type, src_id, relation, dst_type, dst_id, created_at)
SELECT %(tenant_id)s, 'observation', l.src_id, 'extracted_as', 'entry', l.dst_id::text, %(now)s
  FROM unnest(%(src_id)s::bigint[], %(dst_id)s::bigint[]) AS l(src_id, dst_id)
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
       -- doubling, but never past a century (nor overflowing an interval)
       next_attempt_at = %(now)s + least(%(backoff)s * power(2, least(build_attempts, 20)),
                                         interval '100 years'),
       build_queued_at = NULL  -- back in the outbox, handed over again once its backoff passes
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
   AND status = ANY(%(statuses)s)
 ORDER BY valid_from, id
 LIMIT %(limit)s;

-- name: count_waiting_builds
SELECT count(*) AS n FROM memory_sessions WHERE status = 'closed';

-- name: entry
SELECT * FROM memory_entries WHERE tenant_id = %(tenant_id)s AND id = %(id)s;

-- name: entries
SELECT * FROM memory_entries WHERE tenant_id = %(tenant_id)s AND id = ANY (%(ids)s);

-- name: lock_entry
-- The entry as a change sees it: concurrent edits and deletes of it wait for each other,
-- so each history row's old side is what the change replaced.
SELECT * FROM memory_entries WHERE tenant_id = %(tenant_id)s AND id = %(id)s FOR UPDATE;

-- name: entry_history
SELECT id, entry_id, action, old_statement, new_statement, old_status, new_status, actor,
       reason, at
  FROM memory_entry_history
 WHERE tenant_id = %(tenant_id)s AND entry_id = %(id)s
 ORDER BY id;

-- name: edit_entry
-- A new statement drops what was read from the old one (its object, predicate and
-- polarity, which the profile and supersede take as the fact's value): the value is then
-- the statement itself, until an edit gives fields of its own.
UPDATE memory_entries
   SET canonical_statement = %(statement)s, embedding = %(embedding)s::vector::halfvec,
       embedding_model = %(embedding_model)s,
       fields = CASE WHEN canonical_statement = %(statement)s THEN fields
                     ELSE fields - 'object' - 'predicate' - 'polarity' END || %(fields)s,
       updated_at = %(now)s
 WHERE tenant_id = %(tenant_id)s AND id = %(id)s AND status = 'active'
RETURNING *;

-- name: delete_owner_entries
-- A user's entries go with the summaries of the sessions the user took part in and with
-- every entry built from the user's messages (another user's restatement of what they
-- said, an agent's experience of their request).
WITH old AS (
    SELECT id, status FROM memory_entries
     WHERE tenant_id = %(tenant_id)s AND status <> 'deleted'
       AND ((owner_type = %(owner_type)s AND owner_id = %(owner_id)s)
            OR (%(owner_type)s = 'user' AND owner_type = 'channel'
                AND fields -> 'participant_ids' ? %(owner_id)s)
            OR (%(owner_type)s = 'user' AND fields -> 'source_actor_ids' ? %(owner_id)s))
       FOR UPDATE)
UPDATE memory_entries e
   SET status = 'deleted', expired_at = %(now)s, updated_at = %(now)s
  FROM old
 WHERE e.tenant_id = %(tenant_id)s AND e.id = old.id
RETURNING e.id, e.canonical_statement, old.status;

-- name: owner_entries_page
SELECT * FROM memory_entries
 WHERE tenant_id = %(tenant_id)s AND status = 'active'
   AND ((owner_type = 'user' AND owner_id = %(user_id)s)
        OR (owner_type = 'agent' AND owner_id = %(agent_id)s
            AND (%(user_id)s::text IS NULL OR learnt_from IN (%(user_id)s, ''))))
 ORDER BY id
 LIMIT %(limit)s OFFSET %(offset)s;

-- name: count_owner_entries
SELECT count(*) AS n FROM memory_entries
 WHERE tenant_id = %(tenant_id)s AND status = 'active'
   AND ((owner_type = 'user' AND owner_id = %(user_id)s)
        OR (owner_type = 'agent' AND owner_id = %(agent_id)s
            AND (%(user_id)s::text IS NULL OR learnt_from IN (%(user_id)s, ''))));

-- name: owners
SELECT owner_type, owner_id, count(*) AS entries, max(updated_at) AS updated_at
  FROM memory_entries
 WHERE tenant_id = %(tenant_id)s AND status = 'active' AND owner_type IN ('user', 'agent')
 GROUP BY owner_type, owner_id
 ORDER BY owner_type, owner_id;

-- name: unclaim_builds
-- Claims whose messages could not be sent go back to the outbox (this hand-over's only).
UPDATE memory_sessions m SET build_queued_at = NULL
  FROM unnest(%(tenants)s::text[], %(ids)s::bigint[]) AS c(tenant_id, id)
 WHERE m.tenant_id = c.tenant_id AND m.id = c.id AND m.build_queued_at = %(now)s;

-- name: claim_builds
-- The builds to hand to the queue now, marked as handed over (the caller sends their
-- messages before this transaction commits, so a send that fails leaves them waiting):
-- sessions never handed over, or handed over before stale_before (their message may be
-- lost; NULL: none is), that are closed or failed with their backoff passed under the
-- attempt limit. At most per_tenant of a tenant and limit in all, oldest first; a session
-- locked by its build or by another hand-over is skipped.
WITH tenants AS (
    SELECT DISTINCT tenant_id FROM memory_sessions
     WHERE status IN ('closed', 'failed')
       AND (%(tenant_id)s::text IS NULL OR tenant_id = %(tenant_id)s)
), due AS (
    SELECT s.tenant_id, s.id
      FROM tenants t
     CROSS JOIN LATERAL (
        SELECT tenant_id, id FROM memory_sessions
         WHERE tenant_id = t.tenant_id
           AND (%(ids)s::bigint[] IS NULL OR id = ANY(%(ids)s::bigint[]))
           AND (build_queued_at IS NULL OR build_queued_at <= %(stale_before)s)
           AND (status = 'closed'
                OR (status = 'failed' AND next_attempt_at <= %(now)s
                    AND build_attempts < %(max_attempts)s))
         ORDER BY id
         LIMIT %(per_tenant)s
           FOR UPDATE SKIP LOCKED) s
     LIMIT %(limit)s
)
UPDATE memory_sessions m SET build_queued_at = %(now)s
  FROM due
 WHERE m.tenant_id = due.tenant_id AND m.id = due.id
RETURNING m.tenant_id, m.id;

------------------------------------------------------------------------------ the change feed

-- name: lock_changes_exclusive
-- Waits until no transaction that announced entry changes is still in flight.
SELECT pg_advisory_xact_lock(%(key)s);

-- name: last_history_id
-- The last history id allocated, in any tenant (the identity's sequence: O(1)).
SELECT COALESCE(pg_sequence_last_value(
           pg_get_serial_sequence('memory_entry_history', 'id')), 0) AS id;

-- name: checkpoint
SELECT position FROM consumer_checkpoint
 WHERE tenant_id = %(tenant_id)s AND consumer = %(consumer)s;

-- name: save_checkpoint
INSERT INTO consumer_checkpoint AS c (tenant_id, consumer, position, updated_at)
VALUES (%(tenant_id)s, %(consumer)s, %(position)s, %(now)s)
ON CONFLICT (tenant_id, consumer) DO UPDATE
   SET position = EXCLUDED.position, updated_at = EXCLUDED.updated_at
 WHERE c.position < EXCLUDED.position;

-- name: last_tenant_history_id
SELECT max(id) AS id FROM memory_entry_history WHERE tenant_id = %(tenant_id)s;

-- name: reembed_job
SELECT model, missing_only, after_id, done, started_at, updated_at
  FROM memledger_reembed
   FOR UPDATE;

-- name: reembed_start
INSERT INTO memledger_reembed (model, missing_only, started_at, updated_at)
VALUES (%(model)s, %(missing_only)s, %(now)s, %(now)s);

-- name: reembed_remaining
-- What a re-embed has still to read past its cursor (all tenants: run as the owner role).
SELECT count(*) AS n
  FROM memory_entries
 WHERE id > %(after_id)s AND embedding IS NOT NULL
   AND NOT (%(missing_only)s AND embedding_model = %(model)s);

-- name: reembed_next
-- The next entries past the cursor, with what their embedded text is made of and the
-- digest of their vector now (of its binary form: 8 times cheaper than of its text).
SELECT tenant_id, id, owner_id, kind, canonical_statement, fields, valid_from,
       md5(halfvec_send(embedding)) AS digest
  FROM memory_entries
 WHERE id > %(after_id)s AND embedding IS NOT NULL
   AND NOT (%(missing_only)s AND embedding_model = %(model)s)
 ORDER BY id
 LIMIT %(limit)s;

-- name: reembed_stale
-- Entries the switch must embed first: none in the target model yet, or rewritten since.
SELECT e.tenant_id, e.id, e.owner_id, e.kind, e.canonical_statement, e.fields, e.valid_from,
       md5(halfvec_send(e.embedding)) AS digest
  FROM memory_entries e
  LEFT JOIN memory_entry_vectors v
         ON v.tenant_id = e.tenant_id AND v.entry_id = e.id AND v.model = %(model)s
 WHERE e.embedding IS NOT NULL
   AND NOT (%(missing_only)s AND e.embedding_model = %(model)s)
   AND (v.entry_id IS NULL OR v.source_digest <> md5(halfvec_send(e.embedding)))
 ORDER BY e.id;

-- name: reembed_store
INSERT INTO memory_entry_vectors (tenant_id, entry_id, model, embedding, source_digest)
SELECT i.tenant_id, i.id, %(model)s, i.embedding, i.digest
  FROM unnest(%(tenant_id)s::text[], %(id)s::bigint[], %(embedding)b::vector[]::halfvec[],
              %(digest)s::text[])
       AS i(tenant_id, id, embedding, digest)
    ON CONFLICT (tenant_id, entry_id, model)
    DO UPDATE SET embedding = excluded.embedding, source_digest = excluded.source_digest;

-- name: reembed_advance
UPDATE memledger_reembed
   SET after_id = %(after_id)s, done = done + %(n)s, updated_at = %(now)s;

-- name: reembed_switch
-- Every vector moved into its entry at once, with the read model: a search sees the old
-- model's vectors and pointer, or the new ones, never a mix. Not a content change: the
-- entries' updated_at (which the read models follow) stays. A built session's build
-- version names the new model: what it stores is now what a build with it would store.
WITH moved AS (
    UPDATE memory_entries e
       SET embedding = v.embedding, embedding_model = v.model
      FROM memory_entry_vectors v
     WHERE v.tenant_id = e.tenant_id AND v.entry_id = e.id AND v.model = %(model)s
       AND e.embedding IS NOT NULL
 RETURNING e.id
), pointer AS (
    UPDATE memledger_embedding SET read_model = %(model)s, changed_at = %(now)s
), versions AS (
    UPDATE memory_sessions
       SET build_version = regexp_replace(build_version, '\+[^+]*$', '+' || %(model)s)
     WHERE build_version IS NOT NULL
)
SELECT count(*) AS n FROM moved;

-- name: reembed_finish
WITH job AS (DELETE FROM memledger_reembed)
DELETE FROM memory_entry_vectors WHERE model = %(model)s;

-- name: reembed_cancel
WITH job AS (DELETE FROM memledger_reembed RETURNING model),
     vectors AS (DELETE FROM memory_entry_vectors WHERE model IN (SELECT model FROM job))
SELECT model FROM job;
