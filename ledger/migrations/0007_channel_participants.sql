-- Which users each channel's entries name as participants (a session summary names the
-- session's participants in fields.participant_ids): what lets a user's search find the
-- channels they take part in through an index.
--
-- A user's scope holds the channel entries naming them. Matched on the entry alone
-- (`fields -> 'participant_ids' ? user`), that means reading every channel entry of the
-- tenant on each search: under row-level security PostgreSQL uses no index for `?` (its
-- function is not leakproof). The scope now first takes the user's channels from this
-- table (text equality, which an index serves) and then checks each of their entries
-- as before, so the result is the same.
--
-- The trigger keeps the table whole: every channel entry written or rewritten adds its
-- participants (rows are never removed: entries are not either, and a row too many only
-- widens the set the entry check then filters).
CREATE TABLE memory_channel_participants (
    tenant_id  text NOT NULL,
    user_id    text NOT NULL,
    channel_id text NOT NULL,
    PRIMARY KEY (tenant_id, user_id, channel_id)
);

ALTER TABLE memory_channel_participants ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON memory_channel_participants TO memledger_app
    USING (tenant_id = (SELECT current_setting('app.tenant_id', true)))
    WITH CHECK (tenant_id = (SELECT current_setting('app.tenant_id', true)));
GRANT SELECT, INSERT ON memory_channel_participants TO memledger_app;

CREATE FUNCTION memledger_note_participants() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_channel_participants (tenant_id, user_id, channel_id)
    SELECT NEW.tenant_id, p, NEW.owner_id
      FROM jsonb_array_elements_text(NEW.fields -> 'participant_ids') AS p
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

CREATE TRIGGER memory_entries_note_participants
    AFTER INSERT OR UPDATE OF fields, owner_type, owner_id ON memory_entries
    FOR EACH ROW
    WHEN (NEW.owner_type = 'channel'
          AND jsonb_typeof(NEW.fields -> 'participant_ids') = 'array')
    EXECUTE FUNCTION memledger_note_participants();

INSERT INTO memory_channel_participants (tenant_id, user_id, channel_id)
SELECT DISTINCT e.tenant_id, p, e.owner_id
  FROM memory_entries e, jsonb_array_elements_text(e.fields -> 'participant_ids') AS p
 WHERE e.owner_type = 'channel' AND jsonb_typeof(e.fields -> 'participant_ids') = 'array'
ON CONFLICT DO NOTHING;
