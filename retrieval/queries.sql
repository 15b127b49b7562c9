-- name: scope_size
-- How many entries each owner part of the scope holds, counted up to a cap, and whether
-- each has an HNSW index of its own, which decide the paths of the vector and the
-- full-text search; and the HNSW scan parameters for this transaction, in the same round
-- trip. A filtered HNSW scan of the table's index visits about k · table rows / scope rows
-- entries that the filter rejects, an exact one reads every row of the scope: they cost the
-- same at a scope of sqrt(ratio · k · table rows) entries (`crossover`; the table's size is
-- the planner's estimate). Each count is answered from the owner index alone when the
-- scope has no time filter: cheap at any table size.
WITH cap AS (
    SELECT sqrt(%(ratio)s * %(k)s * greatest(reltuples, 0))::bigint AS crossover
      FROM pg_class WHERE oid = 'memory_entries'::regclass
), big AS ({big})
SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true) AS iterative_scan,
       set_config('hnsw.ef_search', %(ef_search)s, true) AS ef_search,
       (SELECT crossover FROM cap) AS crossover,
       ARRAY[{counts}]::bigint[] AS counts,
       ARRAY[{owned}]::boolean[] AS owned;

-- name: scope_count
(SELECT count(*) FROM (
    SELECT 1 FROM memory_entries WHERE {scope}
     LIMIT greatest(%(cap)s, (SELECT crossover FROM cap))
) s)

-- name: owned_count
-- A part with its own index takes that path whatever its size: it is counted only as far
-- as the full-text choice (made on the scope's total) needs: not at all when a part's own
-- index holds the cap (`owners_at_cap`), else up to the cap, by its bound if it has one.
CASE WHEN {own}
     THEN CASE WHEN (SELECT at_cap FROM big) THEN %(cap)s
               ELSE (SELECT count(*) FROM (
                         SELECT 1 FROM memory_entries WHERE {scope} LIMIT %(cap)s) s)
          END
     ELSE {count} END

-- name: owners_at_cap
-- Whether a part's own index alone holds the cap or more entries, by its row count in the
-- statistics (set by the index's build, kept by VACUUM and ANALYZE): the scope is then past
-- the cap, and a large owner is not counted entry by entry. Not for a scope narrowed by
-- kind or time (`false`), of which the index's count says nothing.
SELECT coalesce(max(c.reltuples), 0) >= %(cap)s AS at_cap
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE i.indexrelid = ANY (ARRAY[{names}]::oid[]) AND i.indisvalid

-- name: bounded_count
-- A part that has a bound (a cheaper condition every row of the part meets, counted from
-- the owner index alone) and no index of its own is counted by the bound when its count
-- stays under the cap (the part's own does too: it is ranked exactly either way; only the
-- full-text choice, made on the scope's total, can differ when the bound counts more);
-- otherwise by its own rows.
-- (OFFSET 0: the bound is counted once, not inlined into both of its uses.)
(SELECT CASE WHEN b < greatest(%(cap)s, (SELECT crossover FROM cap)) THEN b
             ELSE {exact} END
   FROM (SELECT {bound} AS b OFFSET 0) s)

-- name: channel_part_bound
-- The entries of the channels the user takes part in
-- (ledger/migrations/0007_channel_participants.sql), which the owner index serves: the
-- channel entries naming the user, and more if the user missed some of a channel's
-- sessions. The user's part of the channels is these with channel_part_indexed as well;
-- the entry check alone would read every channel entry of the tenant.
(owner_type = 'channel'
 AND owner_id = ANY (ARRAY(SELECT channel_id FROM memory_channel_participants
                            WHERE tenant_id = %(tenant_id)s AND user_id = %(user_id)s)))

-- name: channel_part_indexed
-- The channel entries naming the user, as the participant's own HNSW index states them
-- (consolidation/owner_indexes.py): given the channels as well, the planner would rank
-- them through the owner index instead.
(owner_type = 'channel' AND fields -> 'participant_ids' ? %(user_id)s)

-- name: agent_part
-- What the agent learnt from the user or alone (ledger/migrations/0008_agent_learnt_from.sql):
-- a column an index serves, where checking each entry's source actors would read every
-- entry of the agent.
(owner_type = 'agent' AND owner_id = %(agent_id)s AND learnt_from IN (%(user_id)s, ''))

-- name: owner_index_ready
-- Whether the owner's own HNSW index (named by ledger.owner_indexes) exists and is valid.
EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass({name}) AND indisvalid)

-- name: vector_exact
-- Exact cosine distance over the scope's rows, found through the owner index: complete
-- for a small scope, where a filtered HNSW scan can return fewer than asked. Sorting by the
-- output column computes each row's distance once (and reads its vector once), and keeps
-- the planner off the HNSW index, which orders by distance, not by similarity.
SELECT {columns}, 1 - (embedding::halfvec({dim}) <=> %(query)s::halfvec({dim})) AS similarity
  FROM memory_entries
 WHERE {scope} AND embedding_model = {model}
 ORDER BY similarity DESC, id
 LIMIT %(k)s;

-- name: vector_hnsw
-- HNSW with the scope as a filter; iterative scans keep going until enough rows pass it.
-- {model} is a literal, and the scope says status = 'active' as a literal, so the planner
-- can match the per-model partial index (which holds active entries only).
SELECT {columns}, 1 - (embedding::halfvec({dim}) <=> %(query)s::halfvec({dim})) AS similarity
  FROM memory_entries
 WHERE {scope} AND embedding_model = {model}
 ORDER BY embedding::halfvec({dim}) <=> %(query)s::halfvec({dim})
 LIMIT %(k)s;

-- name: vector_hnsw_history
-- A large scope with history: its active entries through HNSW (the index holds those
-- only), its other entries (superseded, merged, archived: usually few) ranked exactly
-- through the owner index (every status but active, spelt out: an index condition on its
-- status column: the second half takes the part as the owner index serves it, the first
-- as its own HNSW index states it); the caller keeps the best k of both lists.
(SELECT {columns}, 1 - (embedding::halfvec({dim}) <=> %(query)s::halfvec({dim})) AS similarity
   FROM memory_entries
  WHERE {scope} AND status = 'active' AND embedding_model = {model}
  ORDER BY embedding::halfvec({dim}) <=> %(query)s::halfvec({dim})
  LIMIT %(k)s)
UNION ALL
(SELECT {columns}, 1 - (embedding::halfvec({dim}) <=> %(query)s::halfvec({dim})) AS similarity
   FROM memory_entries
  WHERE {rest} AND status IN ('superseded', 'merged', 'archived', 'deleted')
    AND embedding_model = {model}
  ORDER BY similarity DESC, id
  LIMIT %(k)s);

-- name: text_matches
-- Entries whose statement matches the full-text query (at most %(scan)s of them, the
-- newest: the same set whatever order the rows are read in), for BM25 to rank: ts_rank
-- has no idf, so common words would outweigh the telling ones.
SELECT id, canonical_statement
  FROM memory_entries, websearch_to_tsquery('english', %(text)s) AS q
 WHERE {scope} AND tsv @@ q
 ORDER BY id DESC
 LIMIT %(scan)s;

-- name: nearest_and_matching
-- A scope small enough for the full-text match to read every row of it (text_matches)
-- ranked exactly by the same read: its rows are read once. Ids only, the k nearest
-- entries of the model (their similarity, best first) and then the entries whose statement
-- matches (at most %(scan)s, the newest, with their statement); entries_by_id fetches
-- the ones kept.
WITH scoped AS MATERIALIZED (
    SELECT id,
           CASE WHEN embedding_model = {model}
                THEN 1 - (embedding::halfvec({dim}) <=> %(query)s::halfvec({dim})) END
               AS similarity,
           CASE WHEN tsv @@ q THEN canonical_statement END AS statement
      FROM memory_entries, websearch_to_tsquery('english', %(text)s) AS q
     WHERE {scope}
)
(SELECT id, similarity, NULL AS statement FROM scoped
  WHERE similarity IS NOT NULL
  ORDER BY similarity DESC, id
  LIMIT %(k)s)
UNION ALL
(SELECT id, NULL, statement FROM scoped
  WHERE statement IS NOT NULL
  ORDER BY id DESC
  LIMIT %(scan)s);

-- name: entries_by_id
-- The entries a search keeps, with their similarity to the query vector (NULL for a row
-- embedded by another model): a full-text hit ranked by its words alone would otherwise
-- compete with no similarity at all.
SELECT {columns},
       CASE WHEN embedding_model = {model}
            THEN 1 - (embedding::halfvec({dim}) <=> %(query)s::halfvec({dim})) END AS similarity
  FROM memory_entries
 WHERE {scope} AND id = ANY(%(ids)s);

-- name: profile_items
-- The user's profile as the context bundle shows it (the read model, materializers/),
-- each row with the provenance of its source entries.
SELECT p.key, p.value, p.statement, p.confidence, p.valid_from, p.source_entry_ids,
       (SELECT coalesce(jsonb_agg(jsonb_build_object(
                   'id', e.id, 'source_session_id', e.source_session_id,
                   'source_event_ids', e.source_event_ids,
                   'source_external_ids', e.source_external_ids)), '[]')
          FROM memory_entries e
         WHERE e.tenant_id = p.tenant_id AND e.id = ANY(p.source_entry_ids)) AS sources
  FROM user_profile p
 WHERE p.tenant_id = %(tenant_id)s AND p.user_id = %(user_id)s;

-- name: skill_sources
-- Where a skill's experiences came from (their session, ledger events and external ids):
-- for a user's bundle, only those the agent learnt from that user or alone.
SELECT id, source_session_id, source_event_ids, source_external_ids FROM memory_entries
 WHERE tenant_id = %(tenant_id)s AND id = ANY(%(ids)s)
   AND (%(user_id)s::text IS NULL OR owner_type <> 'agent' OR learnt_from IN (%(user_id)s, ''));

-- name: record_access
UPDATE memory_entries e
   SET access_count = e.access_count + a.n,
       last_accessed_at = GREATEST(e.last_accessed_at, %(at)s)
  FROM unnest(%(ids)s::bigint[], %(counts)s::int[]) AS a(id, n)
 WHERE e.tenant_id = %(tenant_id)s AND e.id = a.id;
