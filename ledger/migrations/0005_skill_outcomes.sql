-- A skill proposal counts how its procedure fared, for review and for the publication
-- policy (MEMLEDGER_SKILL_AUTO_PUBLISH_AFTER): failed runs of the procedure in how many
-- sessions, the last one's time, and the successful sessions since it. Filled in by the
-- next projection of each agent's experiences.
ALTER TABLE skill_proposal
    ADD COLUMN failure_count           integer     NOT NULL DEFAULT 0
               CHECK (failure_count >= 0),
    ADD COLUMN successes_since_failure integer     NOT NULL DEFAULT 0
               CHECK (successes_since_failure BETWEEN 0 AND evidence_count),
    ADD COLUMN last_failure_at         timestamptz;
