-- Digests: one entry gathering an owner's facts on one topic (consolidation's digest job),
-- linked to each fact it holds by a `collects` link (digest → fact).
--
-- A digest repeats its facts' statements, so it must never outlive one of them: when a
-- collected fact stops being active (superseded, merged, archived, deleted) or its
-- statement is rewritten, the trigger below archives every active digest collecting it,
-- in the same statement, with a history row; the next digest run collects the owner's
-- current facts again. The change's own `updated_at` is the time written (no clock read).
ALTER TABLE memory_entries DROP CONSTRAINT memory_entries_kind_check;
ALTER TABLE memory_entries ADD CONSTRAINT memory_entries_kind_check
    CHECK (kind IN ('preference', 'relationship', 'experience', 'skill', 'goal',
                    'constraint', 'identity', 'event',
                    'agent_experience', 'session_summary', 'episodic', 'digest'));

ALTER TABLE memory_links DROP CONSTRAINT memory_links_relation_check;
ALTER TABLE memory_links ADD CONSTRAINT memory_links_relation_check
    CHECK (relation IN ('extracted_as', 'supersedes', 'merged_into',
                        'contradicts', 'projected_to', 'collects'));

CREATE FUNCTION memledger_digest_member_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    WITH ended AS (
        UPDATE memory_entries d
           SET status = 'archived', expired_at = COALESCE(d.expired_at, NEW.updated_at),
               updated_at = NEW.updated_at
          FROM memory_links l
         WHERE l.tenant_id = NEW.tenant_id AND l.dst_type = 'entry'
           AND l.dst_id = NEW.id::text AND l.relation = 'collects'
           AND d.tenant_id = l.tenant_id AND d.id = l.src_id
           AND d.kind = 'digest' AND d.status = 'active'
        RETURNING d.tenant_id, d.id, d.canonical_statement
    )
    INSERT INTO memory_entry_history
        (tenant_id, entry_id, action, old_statement, new_statement, old_status, new_status,
         actor, reason, at)
    SELECT tenant_id, id, 'ARCHIVE', canonical_statement, canonical_statement, 'active',
           'archived', 'consolidation:digest',
           format('collected entry %s changed (%s)', NEW.id,
                  CASE WHEN NEW.status <> 'active' THEN NEW.status ELSE 'statement' END),
           NEW.updated_at
      FROM ended ORDER BY id;
    RETURN NULL;
END
$$;

CREATE TRIGGER memory_entries_digest_member_changed
    AFTER UPDATE OF status, canonical_statement ON memory_entries
    FOR EACH ROW
    WHEN (OLD.kind <> 'digest' AND OLD.status = 'active'
          AND (NEW.status <> 'active' OR NEW.canonical_statement <> OLD.canonical_statement))
    EXECUTE FUNCTION memledger_digest_member_changed();
