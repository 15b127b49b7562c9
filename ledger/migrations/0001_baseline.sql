-- memledger schema, migration 0001: the baseline data model. Later changes are the
-- numbered files after this one; each runs once, in its own transaction, and is recorded
-- in memledger_migrations (ledger/migrations.py). Never edit an applied migration.
-- Sections: extensions, roles, tables, indexes, functions, triggers, row-level security.
--
-- Conventions
-- * Every table carries tenant_id, and every primary/unique key that crosses tenants
--   includes it, so the schema can be distributed by tenant_id (Citus) without a redesign.
--   The one exception is api_keys.key_hash: a key is looked up before its tenant is known.
--   memledger_migrations (the migrations applied, kept by the runner) belongs to no tenant.
-- * Times are timestamptz. "Event time" is the chat backend's time (occurred_at,
--   valid_from/valid_to); "system time" is when memledger recorded or expired a row
--   (recorded_at, expired_at). Both are passed in by the caller, never read from the clock.

------------------------------------------------------------------------------ extensions
CREATE EXTENSION IF NOT EXISTS vector;

------------------------------------------------------------------------------ roles
-- memledger_app is the role tenant-scoped work runs as (SET LOCAL ROLE); it does not own
-- the tables, so row-level security applies to it. The connecting (owner) role is a member
-- so it can switch to it; cross-tenant maintenance jobs run as the owner.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memledger_app') THEN
        CREATE ROLE memledger_app NOLOGIN;
    END IF;
    IF NOT pg_has_role(current_user, 'memledger_app', 'MEMBER') THEN
        EXECUTE format('GRANT memledger_app TO %I', current_user);
    END IF;
END
$$;

------------------------------------------------------------------------------ tables
-- No index on last_event_at: every append moves it, and without one an open session's
-- update is HOT (no index entries; the fillfactor leaves the page room).
CREATE TABLE memory_sessions (
    tenant_id        text        NOT NULL,
    id               bigint      GENERATED ALWAYS AS IDENTITY,
    channel_id       text        NOT NULL,
    status           text        NOT NULL DEFAULT 'open'
                     CHECK (status IN ('open', 'closed', 'built', 'failed')),
    -- event time of the first and last event in the session
    started_at       timestamptz NOT NULL,
    last_event_at    timestamptz NOT NULL,
    -- event time the session ended (its last event), set when it closes
    ended_at         timestamptz,
    -- system time it was opened / closed
    opened_at        timestamptz NOT NULL,
    closed_at        timestamptz,
    -- system time of the last append that added to it: the idle sweep's second clock
    last_appended_at timestamptz,
    -- why it closed: gap (a later event came after the inactivity gap), explicit,
    -- idle (the sweeper), late (a late event that fits no open session)
    close_reason     text        CHECK (close_reason IN ('gap', 'explicit', 'idle', 'late')),
    event_count      integer     NOT NULL DEFAULT 0,
    -- distinct actor ids that produced events in this session
    participants     text[]      NOT NULL DEFAULT '{}',
    build_attempts   integer     NOT NULL DEFAULT 0,
    -- the build version whose output is current for this session
    build_version    text,
    built_at         timestamptz,
    -- last build failure, or the reason the LLM extractor fell back to heuristic
    last_error       text,
    -- earliest system time a failed build may be retried (backoff)
    next_attempt_at  timestamptz,
    -- system time the session's build was last handed to the queue (Redis). NULL while
    -- the session waits in the outbox: closed (or failed, due for a retry) and not yet
    -- handed over, because its closing request's hand-over failed or has not run yet
    build_queued_at  timestamptz,
    -- the last build's figures: extractor, items kept, what each quality gate dropped
    build_stats      jsonb       NOT NULL DEFAULT '{}',
    PRIMARY KEY (tenant_id, id),
    CHECK (last_event_at >= started_at),
    CHECK ((status = 'open') = (closed_at IS NULL))
) WITH (fillfactor = 70);

CREATE TABLE memory_session_events (
    tenant_id    text        NOT NULL,
    -- id order is commit order: appends are serialized (see ledger/store.py)
    id           bigint      GENERATED ALWAYS AS IDENTITY,
    session_id   bigint      NOT NULL,
    channel_id   text        NOT NULL,
    -- arrival order within the session (1-based)
    seq          integer     NOT NULL CHECK (seq > 0),
    role         text        NOT NULL
                 CHECK (role IN ('user', 'assistant', 'tool_call', 'tool_result', 'file', 'system')),
    actor_id     text        NOT NULL CHECK (actor_id <> ''),
    -- display name used in self-contained statements
    actor_name   text,
    content      text        NOT NULL CHECK (content <> ''),
    -- the chat backend's time (may be in the past for replayed transcripts)
    occurred_at  timestamptz NOT NULL,
    -- the UTC offset it was sent with: the speaker's local day dates "yesterday"
    utc_offset_minutes smallint NOT NULL DEFAULT 0,
    -- system time of the append
    recorded_at  timestamptz NOT NULL,
    -- the backend's message id: a retry with the same id is a no-op
    external_id  text        NOT NULL CHECK (external_id <> ''),
    metadata     jsonb       NOT NULL DEFAULT '{}',
    -- id first: the same index serves the tailing reader (id > checkpoint ORDER BY id)
    PRIMARY KEY (id, tenant_id),
    UNIQUE (tenant_id, channel_id, external_id),
    -- No foreign key to memory_sessions: append creates an event's session in the same
    -- transaction, and a per-row RI check would dominate bulk appends (its cached plan
    -- can be a sequential scan chosen while the table was small). Retention deletes
    -- events explicitly.
    UNIQUE (tenant_id, session_id, seq)
);

CREATE TABLE memory_observations (
    tenant_id          text        NOT NULL,
    id                 bigint      GENERATED ALWAYS AS IDENTITY,
    session_id         bigint      NOT NULL,
    build_version      text        NOT NULL,
    owner_type         text        NOT NULL CHECK (owner_type IN ('user', 'agent', 'channel')),
    owner_id           text        NOT NULL,
    -- stable key of the item per owner within the session (e.g. preference:drink)
    key                text        NOT NULL,
    kind               text        NOT NULL,
    extractor          text        NOT NULL,
    extractor_version  text        NOT NULL,
    statement          text        NOT NULL CHECK (btrim(statement) <> ''),
    confidence         real        NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    importance         real        NOT NULL CHECK (importance BETWEEN 0 AND 1),
    fields             jsonb       NOT NULL DEFAULT '{}',
    -- provenance: the exact events this was derived from (checked by a trigger)
    source_event_ids   bigint[]    NOT NULL CHECK (cardinality(source_event_ids) > 0),
    created_at         timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    -- two users of a group chat may both state a fact with the same key
    UNIQUE (tenant_id, session_id, build_version, owner_type, owner_id, key),
    FOREIGN KEY (tenant_id, session_id) REFERENCES memory_sessions (tenant_id, id)
        ON DELETE CASCADE
);

CREATE TABLE memory_entries (
    tenant_id            text        NOT NULL,
    id                   bigint      GENERATED ALWAYS AS IDENTITY,
    owner_type           text        NOT NULL CHECK (owner_type IN ('user', 'agent', 'channel')),
    owner_id             text        NOT NULL,
    -- one of the eight user-fact kinds, agent_experience, session_summary, episodic
    kind                 text        NOT NULL,
    -- normalized key (kind:attribute); facts about the same owner and key may supersede
    key                  text        NOT NULL,
    canonical_statement  text        NOT NULL CHECK (btrim(canonical_statement) <> ''),
    fields               jsonb       NOT NULL DEFAULT '{}',
    -- untyped so several embedding models can live side by side during a re-embed; the
    -- default model has a partial HNSW index on embedding::vector(384) (below)
    embedding            vector,
    embedding_model      text,
    tsv                  tsvector    GENERATED ALWAYS AS
                         (to_tsvector('english', canonical_statement)) STORED,
    confidence           real        NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    importance           real        NOT NULL CHECK (importance BETWEEN 0 AND 1),
    status               text        NOT NULL DEFAULT 'active'
                         CHECK (status IN ('active', 'superseded', 'merged', 'archived', 'deleted')),
    -- event time the fact holds from / until (bi-temporal: valid time)
    valid_from           timestamptz NOT NULL,
    valid_to             timestamptz,
    -- system time it was recorded / stopped being current (bi-temporal: transaction time)
    recorded_at          timestamptz NOT NULL,
    expired_at           timestamptz,
    superseded_by        bigint,
    -- NULL once retention deleted the ledger session; the entry survives
    source_session_id    bigint,
    -- provenance: event ids and the backend's external ids (which survive retention)
    source_event_ids     bigint[]    NOT NULL CHECK (cardinality(source_event_ids) > 0),
    source_external_ids  text[]      NOT NULL DEFAULT '{}',
    access_count         integer     NOT NULL DEFAULT 0,
    last_accessed_at     timestamptz,
    updated_at           timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    CHECK ((embedding IS NULL) = (embedding_model IS NULL)),
    CHECK (valid_to IS NULL OR valid_to >= valid_from),
    FOREIGN KEY (tenant_id, source_session_id) REFERENCES memory_sessions (tenant_id, id)
        ON DELETE SET NULL (source_session_id)
);

CREATE TABLE memory_links (
    tenant_id   text        NOT NULL,
    id          bigint      GENERATED ALWAYS AS IDENTITY,
    src_type    text        NOT NULL CHECK (src_type IN ('observation', 'entry')),
    src_id      bigint      NOT NULL,
    -- extracted_as (observation→entry), supersedes / merged_into / contradicts
    -- (entry→entry), projected_to (entry→read model row)
    relation    text        NOT NULL
                CHECK (relation IN ('extracted_as', 'supersedes', 'merged_into',
                                    'contradicts', 'projected_to')),
    dst_type    text        NOT NULL CHECK (dst_type IN ('entry', 'user_profile', 'skill_proposal')),
    -- entry id, or the read model row's key rendered as text
    dst_id      text        NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, src_type, src_id, relation, dst_type, dst_id)
);

CREATE TABLE memory_entry_history (
    tenant_id      text        NOT NULL,
    id             bigint      GENERATED ALWAYS AS IDENTITY,
    entry_id       bigint      NOT NULL,
    action         text        NOT NULL
                   CHECK (action IN ('ADD', 'UPDATE', 'SUPERSEDE', 'MERGE', 'ARCHIVE', 'DELETE')),
    old_statement  text,
    new_statement  text,
    old_status     text,
    new_status     text,
    -- who made the change: builder, a consolidation job, or api:<caller>
    actor          text        NOT NULL,
    reason         text,
    at             timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, entry_id) REFERENCES memory_entries (tenant_id, id)
);

CREATE TABLE user_profile (
    tenant_id         text        NOT NULL,
    user_id           text        NOT NULL,
    key               text        NOT NULL,
    -- the current fact's value and statement (materializers/profile.py)
    value             text        NOT NULL,
    statement         text        NOT NULL,
    confidence        real        NOT NULL,
    -- the current fact and the active facts stating the same value
    source_entry_ids  bigint[]    NOT NULL CHECK (cardinality(source_entry_ids) > 0),
    -- active facts that disagree: [{entry_id, value, statement, valid_from}]
    conflicts         jsonb       NOT NULL DEFAULT '[]',
    valid_from        timestamptz NOT NULL,
    -- system time the row last changed
    updated_at        timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, user_id, key)
);

CREATE TABLE skill_proposal (
    tenant_id         text        NOT NULL,
    id                bigint      GENERATED ALWAYS AS IDENTITY,
    agent_id          text        NOT NULL,
    skill_key         text        NOT NULL,
    goal              text        NOT NULL,
    -- ordered steps of the path that worked
    steps             jsonb       NOT NULL DEFAULT '[]',
    failures          jsonb       NOT NULL DEFAULT '[]',
    applies_to        jsonb       NOT NULL DEFAULT '[]',
    -- how many sessions showed this skill (0: a reviewed skill whose evidence is gone)
    evidence_count    integer     NOT NULL DEFAULT 0,
    source_entry_ids  bigint[]    NOT NULL DEFAULT '{}',
    -- review state: never derived from entries, kept by every recomputation
    status            text        NOT NULL DEFAULT 'proposed'
                      CHECK (status IN ('proposed', 'published', 'rejected')),
    reviewed_by       text,
    reviewed_at       timestamptz,
    review_reason     text,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, agent_id, skill_key),
    CHECK (evidence_count BETWEEN 0 AND cardinality(source_entry_ids)),
    CHECK ((status = 'proposed') = (reviewed_at IS NULL)),
    CHECK ((reviewed_at IS NULL) = (reviewed_by IS NULL))
);

CREATE TABLE consumer_checkpoint (
    -- '*' for a consumer that reads across tenants
    tenant_id   text        NOT NULL,
    consumer    text        NOT NULL,
    -- the last id the consumer has fully processed
    position    bigint      NOT NULL DEFAULT 0,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, consumer)
);

CREATE TABLE consolidation_runs (
    -- '*' for a run across tenants
    tenant_id     text        NOT NULL,
    id            bigint      GENERATED ALWAYS AS IDENTITY,
    job           text        NOT NULL,
    -- the schedule window this run covers: at most one run per job and window
    window_start  timestamptz NOT NULL,
    window_end    timestamptz NOT NULL,
    started_at    timestamptz NOT NULL,
    finished_at   timestamptz,
    stats         jsonb       NOT NULL DEFAULT '{}',
    error         text,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, job, window_start)
);

CREATE TABLE api_keys (
    tenant_id    text        NOT NULL,
    id           bigint      GENERATED ALWAYS AS IDENTITY,
    -- sha256 of the key; the plain key is shown once and never stored
    key_hash     bytea       NOT NULL UNIQUE,
    -- first characters of the key, to tell keys apart in listings
    key_prefix   text        NOT NULL,
    name         text,
    scopes       text[]      NOT NULL DEFAULT '{read,write}',
    created_at   timestamptz NOT NULL,
    revoked_at   timestamptz,
    PRIMARY KEY (tenant_id, id)
);

-- The Idempotency-Key of a memory write: the request it was first used for and the
-- response it got. A retry with the key gets that response again and writes nothing; the
-- key is taken in the request's own transaction, so two concurrent uses wait for each other.
CREATE TABLE api_idempotency_keys (
    tenant_id      text        NOT NULL,
    key            text        NOT NULL,
    -- sha256 of the route and the request body: the key used for another request is refused
    request_digest bytea       NOT NULL,
    -- the response body (JSON text, answered again byte for byte), written before the
    -- request commits
    response       text,
    created_at     timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, key)
);

------------------------------------------------------------------------------ indexes
CREATE UNIQUE INDEX memory_sessions_one_open
    ON memory_sessions (tenant_id, channel_id) WHERE status = 'open';
CREATE INDEX memory_sessions_channel_time
    ON memory_sessions (tenant_id, channel_id, started_at);
CREATE INDEX memory_sessions_to_build
    ON memory_sessions (status, next_attempt_at) WHERE status IN ('closed', 'failed');
-- No index on last_event_at (see memory_sessions): the idle sweep reads the open
-- sessions through memory_sessions_one_open.
-- Retention's sessions, by closed_at (system time, not the conversation's ended_at).
-- Partial: an index on the tenant alone would tie, in the planner's eyes, with the exact
-- indexes above while a young table has no statistics yet, and lose by scanning the
-- whole tenant.
CREATE INDEX memory_sessions_retention_closed
    ON memory_sessions (tenant_id, closed_at) WHERE status IN ('built', 'failed');
-- the sweep's expiry of idempotency keys
CREATE INDEX api_idempotency_keys_created ON api_idempotency_keys (created_at);
CREATE INDEX memory_entries_owner
    ON memory_entries (tenant_id, owner_type, owner_id, status, kind);
CREATE INDEX memory_entries_key
    ON memory_entries (tenant_id, owner_type, owner_id, key) WHERE status = 'active';
CREATE INDEX memory_entries_session ON memory_entries (tenant_id, source_session_id);
CREATE INDEX memory_entries_updated ON memory_entries (updated_at);
CREATE INDEX memory_entries_tsv ON memory_entries USING gin (tsv);
-- HNSW for the default local model (384-d); other models get their own partial index
CREATE INDEX memory_entries_embedding_minilm
    ON memory_entries USING hnsw ((embedding::vector(384)) vector_cosine_ops)
    WHERE embedding_model = 'all-MiniLM-L6-v2-int8';
CREATE INDEX memory_links_dst ON memory_links (tenant_id, dst_type, dst_id);
CREATE INDEX memory_entry_history_entry
    ON memory_entry_history (tenant_id, entry_id, id);

------------------------------------------------------------------------------ functions
-- Whether a scope of user p_user with agent p_agent shows an entry of that agent: when it
-- was learnt from the user's or the agent's own events alone (fields.source_actor_ids),
-- or names no authors; never what the agent learnt serving another user. Without a user,
-- every entry of the agent. Inlined by the planner (plain SQL, immutable).
CREATE FUNCTION memledger_learnt_from(p_fields jsonb, p_user text, p_agent text)
RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT p_user IS NULL OR NOT p_fields ? 'source_actor_ids'
           OR p_fields -> 'source_actor_ids' <@ jsonb_build_array(p_user, p_agent)
$$;

-- Provenance must name real events of the observation's own session. Checked once per
-- statement over all inserted rows (the builder inserts a session's observations at once).
CREATE FUNCTION memledger_check_observation_provenance() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    bad bigint;
BEGIN
    SELECT o.session_id INTO bad
      FROM inserted o
     WHERE (SELECT count(*) FROM memory_session_events e
             WHERE e.tenant_id = o.tenant_id AND e.session_id = o.session_id
               AND e.id = ANY (o.source_event_ids))
           <> cardinality(ARRAY(SELECT DISTINCT unnest(o.source_event_ids)))
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'observation provenance names events outside session %', bad
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END
$$;

-- The ledger is append-only. The one exception is ledger retention, which runs through
-- memledger_retention_delete() below and marks its transaction with memledger.retention.
CREATE FUNCTION memledger_events_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('memledger.retention', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'memory_session_events is append-only (% rejected)', TG_OP
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'old ledgers are removed only by memledger_retention_delete()';
END
$$;

-- Deletes one tenant's ledger sessions (and their events) closed before the cutoff: the
-- server's time, so a replayed transcript's old dates do not doom it on arrival. Entries
-- survive with source_session_id set to NULL. Returns the number of sessions.
CREATE FUNCTION memledger_retention_delete(p_tenant text, p_before timestamptz)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    deleted integer;
BEGIN
    PERFORM set_config('memledger.retention', 'on', true);
    WITH gone AS (
        DELETE FROM memory_sessions
         WHERE tenant_id = p_tenant AND status IN ('built', 'failed') AND closed_at < p_before
        RETURNING id),
    events AS (
        DELETE FROM memory_session_events e
         USING gone WHERE e.tenant_id = p_tenant AND e.session_id = gone.id)
    SELECT count(*) INTO deleted FROM gone;
    PERFORM set_config('memledger.retention', 'off', true);
    RETURN deleted;
END
$$;

------------------------------------------------------------------------------ triggers
CREATE TRIGGER memory_observations_provenance
    AFTER INSERT ON memory_observations REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION memledger_check_observation_provenance();

CREATE TRIGGER memory_session_events_append_only
    BEFORE UPDATE OR DELETE ON memory_session_events
    FOR EACH ROW EXECUTE FUNCTION memledger_events_append_only();

CREATE TRIGGER memory_session_events_no_truncate
    BEFORE TRUNCATE ON memory_session_events
    FOR EACH STATEMENT EXECUTE FUNCTION memledger_events_append_only();

------------------------------------------------------------------------------ row-level security
-- Every table is filtered by app.tenant_id for memledger_app. The owner role is not
-- subject (no FORCE), so cross-tenant maintenance runs as the owner.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memory_sessions', 'memory_session_events', 'memory_observations',
                             'memory_entries', 'memory_links', 'memory_entry_history',
                             'user_profile', 'skill_proposal', 'consumer_checkpoint',
                             'consolidation_runs', 'api_keys', 'api_idempotency_keys']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I TO memledger_app '
            'USING (tenant_id = (SELECT current_setting(''app.tenant_id'', true))) '
            'WITH CHECK (tenant_id = (SELECT current_setting(''app.tenant_id'', true)))', t);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO memledger_app', t);
    END LOOP;
END
$$;
-- The ledger stays append-only for the app role even before the trigger fires.
REVOKE UPDATE, DELETE, TRUNCATE ON memory_session_events FROM memledger_app;
DO $$
BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO memledger_app', current_schema());
    EXECUTE format('GRANT USAGE ON ALL SEQUENCES IN SCHEMA %I TO memledger_app', current_schema());
END
$$;
