-- HNSW for the q8row build of the local model (integer arithmetic with a scale per token),
-- the default for new databases. A database keeps reading the model its entries are in
-- until `memledger reembed` switches it, so the other builds keep their indexes.
CREATE INDEX memory_entries_embedding_minilm_q8row
    ON memory_entries USING hnsw ((embedding::halfvec(384)) halfvec_cosine_ops)
    WHERE embedding_model = 'all-MiniLM-L6-v2-q8row' AND status = 'active';
