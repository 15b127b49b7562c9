-- name: scope_size
-- How many entries the scope holds, counted up to a cap (cheap at any table size): it
-- decides between the exact and the HNSW path of the vector search.
SELECT count(*) AS n FROM (
    SELECT 1 FROM memory_entries WHERE {scope} LIMIT %(cap)s
) s;

-- name: vector_exact
-- Exact cosine distance over the scope's rows, found through the owner index: complete
-- for a small scope, where a filtered HNSW scan can return fewer than asked.
SELECT {columns}, 1 - (embedding::vector({dim}) <=> %(query)s::vector({dim})) AS similarity
  FROM memory_entries
 WHERE {scope} AND embedding_model = {model}
 ORDER BY (embedding::vector({dim}) <=> %(query)s::vector({dim})) + 0, id
 LIMIT %(k)s;

-- name: vector_hnsw
-- HNSW with the scope as a filter; iterative scans keep going until enough rows pass it.
-- {model} is a literal so the planner can match the per-model partial index.
SELECT {columns}, 1 - (embedding::vector({dim}) <=> %(query)s::vector({dim})) AS similarity
  FROM memory_entries
 WHERE {scope} AND embedding_model = {model}
 ORDER BY embedding::vector({dim}) <=> %(query)s::vector({dim})
 LIMIT %(k)s;

-- name: text_matches
-- Entries whose statement matches the full-text query (at most %(scan)s of them), for BM25
-- to rank: ts_rank has no idf, so common words would outweigh the telling ones.
SELECT id, canonical_statement
  FROM memory_entries, websearch_to_tsquery('english', %(text)s) AS q
 WHERE {scope} AND tsv @@ q
 LIMIT %(scan)s;

-- name: entries_by_id
SELECT {columns} FROM memory_entries WHERE {scope} AND id = ANY(%(ids)s);

-- name: record_access
UPDATE memory_entries e
   SET access_count = e.access_count + a.n,
       last_accessed_at = GREATEST(e.last_accessed_at, %(at)s)
  FROM unnest(%(ids)s::bigint[], %(counts)s::int[]) AS a(id, n)
 WHERE e.tenant_id = %(tenant_id)s AND e.id = a.id;
