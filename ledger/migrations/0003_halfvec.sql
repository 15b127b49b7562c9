-- memory_entries.embedding stored as halfvec (pgvector's 2-byte floats), kept in the row.
--
-- A 384-d vector took 1,544 bytes as fp32, which pushed most rows past the toaster's
-- 2 KB threshold: the vector went to the TOAST table and every exact scan read it back
-- from there. As halfvec it takes 776 bytes. STORAGE MAIN keeps it in the row: the toaster
-- compresses and moves out the row's other wide columns (statement, tsv, fields) first,
-- and moves a MAIN column out only when the row would still exceed a whole page (≈ 8 KB),
-- so vectors of wider models (1536-d: 3 KB) stay inline too. Not PLAIN: a row that cannot
-- fit a page would then be refused.
--
-- Still untyped, so several models can live side by side during a re-embed; each model's
-- vectors are read as embedding::halfvec(dim). halfvec keeps ≈ 3 significant digits
-- (cosine moves by < 1e-3 for unit vectors): ranking on LoCoMo is unchanged within 0.005.
--
-- The default model's HNSW index is rebuilt on halfvec, and holds active entries only:
-- a consolidation status change (superseded, merged, archived, deleted) then adds no HNSW
-- entry for the row's new version (every update of an entry is a non-HOT update: status
-- and updated_at are indexed), and a filtered scan no longer walks past history. A search
-- uses it when its WHERE says status = 'active' (retrieval/candidates.py); a search with
-- history ranks the scope's other entries exactly beside it.
--
-- The table is rewritten (its indexes rebuilt) under an exclusive lock: minutes for a
-- million entries, most of it the HNSW build (maintenance_work_mem decides its speed).
DROP INDEX memory_entries_embedding_minilm;

ALTER TABLE memory_entries
    ALTER COLUMN embedding TYPE halfvec USING embedding::halfvec,
    ALTER COLUMN embedding SET STORAGE MAIN;

-- HNSW for the default local model (384-d); other models get their own partial index
CREATE INDEX memory_entries_embedding_minilm
    ON memory_entries USING hnsw ((embedding::halfvec(384)) halfvec_cosine_ops)
    WHERE embedding_model = 'all-MiniLM-L6-v2-int8' AND status = 'active';
