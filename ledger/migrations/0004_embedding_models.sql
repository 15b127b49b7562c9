-- Which embedding model reads use, and re-embedding into another one while they do.
--
-- memledger_embedding holds one row: read_model, the model of every stored vector that
-- searches rank by (NULL until the first entry is built: the configured model is then
-- recorded). Writers (builds, edits) read it FOR SHARE and embed with that model; a
-- re-embed's switch takes it FOR UPDATE, so it waits for the writers in flight and the
-- next ones wait for it.
--
-- memledger_reembed is a re-embed in progress (at most one): its target model, whether it
-- skips entries already in that model, and its cursor (the last entry id done), committed
-- with each batch so that a killed run resumes where it stopped. The vectors it computes
-- wait in memory_entry_vectors, beside the entries' own, until the switch moves them into
-- memory_entries in one transaction together with read_model.
CREATE TABLE memledger_embedding (
    singleton  boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    read_model text,
    changed_at timestamptz
);
INSERT INTO memledger_embedding (read_model)
SELECT (SELECT embedding_model FROM memory_entries WHERE embedding_model IS NOT NULL
         GROUP BY embedding_model ORDER BY count(*) DESC, embedding_model LIMIT 1);

CREATE TABLE memledger_reembed (
    singleton    boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    model        text        NOT NULL,
    missing_only boolean     NOT NULL,
    after_id     bigint      NOT NULL DEFAULT 0,
    done         bigint      NOT NULL DEFAULT 0,
    started_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);

-- source_digest: md5 of the entry's own vector when its text was read; an entry rewritten
-- since (a rebuild, an edit) has another vector, and is embedded again at the switch.
-- The owner role alone reads and writes it (memledger_app has no grant).
CREATE TABLE memory_entry_vectors (
    tenant_id     text    NOT NULL,
    entry_id      bigint  NOT NULL,
    model         text    NOT NULL,
    embedding     halfvec NOT NULL,
    source_digest text    NOT NULL,
    PRIMARY KEY (tenant_id, entry_id, model),
    FOREIGN KEY (tenant_id, entry_id) REFERENCES memory_entries (tenant_id, id) ON DELETE CASCADE
);
ALTER TABLE memory_entry_vectors ALTER COLUMN embedding SET STORAGE MAIN;

-- Reads and writes scoped to a tenant see which model is read; only the owner role
-- (maintenance, across tenants) re-embeds.
GRANT SELECT ON memledger_embedding TO memledger_app;

-- HNSW for the q8 build of the local model (the same model with integer arithmetic).
CREATE INDEX memory_entries_embedding_minilm_q8
    ON memory_entries USING hnsw ((embedding::halfvec(384)) halfvec_cosine_ops)
    WHERE embedding_model = 'all-MiniLM-L6-v2-q8' AND status = 'active';
