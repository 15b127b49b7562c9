-- Whom each agent entry was learnt from, in a column an index serves.
--
-- A user's scope with an agent holds what the agent learnt from that user or alone:
-- memledger_learnt_from(fields, user, agent), its experiences whose source actors are
-- all the user or the agent itself. Checked on the entries alone, that reads every entry
-- of the agent on each search (hundreds of ms for an agent that served thousands of
-- users): under row-level security PostgreSQL uses an index for a condition only when
-- its functions are leakproof. `learnt_from` says the same in a plain column: '' when
-- the agent learnt it alone (no source actor but itself), the one user it learnt it from,
-- or NULL when it learnt it from several (no user's scope holds it). So
-- memledger_learnt_from(fields, u, a) = (learnt_from IN (u, '')) for u not NULL and a
-- the entry's agent. A trigger keeps it for every agent entry written or rewritten.
CREATE FUNCTION memledger_learnt_key(p_fields jsonb, p_agent text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    WITH sources AS (
        SELECT CASE jsonb_typeof(p_fields -> 'source_actor_ids')
                    WHEN 'array' THEN p_fields -> 'source_actor_ids'
                    WHEN 'string' THEN jsonb_build_array(p_fields -> 'source_actor_ids')
               END AS ids
    ), others AS (
        SELECT e FROM sources, jsonb_array_elements(sources.ids) AS e
         WHERE e <> to_jsonb(p_agent)
    )
    SELECT CASE
        WHEN p_fields IS NULL OR NOT p_fields ? 'source_actor_ids' THEN ''
        WHEN (SELECT ids FROM sources) IS NULL THEN NULL
        WHEN EXISTS (SELECT 1 FROM others WHERE jsonb_typeof(e) <> 'string') THEN NULL
        WHEN (SELECT count(DISTINCT e) FROM others) = 0 THEN ''
        -- ('' is no user's id: it marks what the agent learnt alone)
        WHEN (SELECT count(DISTINCT e) FROM others) = 1
            THEN (SELECT NULLIF(min(e #>> '{}'), '') FROM others)
    END
$$;

ALTER TABLE memory_entries ADD COLUMN learnt_from text;

CREATE FUNCTION memledger_set_learnt_from() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.learnt_from := memledger_learnt_key(NEW.fields, NEW.owner_id);
    RETURN NEW;
END
$$;

-- (Searches read the column with owner_type = 'agent' only: other rows keep NULL.)
CREATE TRIGGER memory_entries_set_learnt_from
    BEFORE INSERT OR UPDATE OF fields, owner_type, owner_id ON memory_entries
    FOR EACH ROW WHEN (NEW.owner_type = 'agent')
    EXECUTE FUNCTION memledger_set_learnt_from();

UPDATE memory_entries SET learnt_from = memledger_learnt_key(fields, owner_id)
 WHERE owner_type = 'agent';

CREATE INDEX memory_entries_learnt_from
    ON memory_entries (tenant_id, owner_id, learnt_from, status) WHERE owner_type = 'agent';
