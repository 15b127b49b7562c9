-- memory_entries.kind: only the kinds the builder writes (observations/extract/base.py
-- KINDS: the eight user-fact kinds, agent_experience, session_summary, episodic). A new
-- kind needs a migration that replaces this constraint.
ALTER TABLE memory_entries ADD CONSTRAINT memory_entries_kind_check
    CHECK (kind IN ('preference', 'relationship', 'experience', 'skill', 'goal',
                    'constraint', 'identity', 'event',
                    'agent_experience', 'session_summary', 'episodic'));
