-- name: ensure_checkpoint
INSERT INTO consumer_checkpoint (tenant_id, consumer, position, updated_at)
VALUES (%(tenant_id)s, %(consumer)s, 0, %(now)s)
ON CONFLICT DO NOTHING;

-- name: lock_checkpoint
-- Serializes runs of the consumer for one tenant.
SELECT position FROM consumer_checkpoint
 WHERE tenant_id = %(tenant_id)s AND consumer = %(consumer)s
   FOR UPDATE;

-- name: advance_checkpoint
UPDATE consumer_checkpoint
   SET position = %(position)s, updated_at = %(now)s
 WHERE tenant_id = %(tenant_id)s AND consumer = %(consumer)s AND position < %(position)s;

-- name: owners_changed_counted
-- The owners whose entries changed in (after, upto], with how many changes each.
SELECT e.owner_type, e.owner_id, count(*) AS changes
  FROM memory_entry_history h
  JOIN memory_entries e ON e.tenant_id = h.tenant_id AND e.id = h.entry_id
 WHERE h.tenant_id = %(tenant_id)s AND h.id > %(after)s AND h.id <= %(upto)s
 GROUP BY e.owner_type, e.owner_id
 ORDER BY e.owner_type, e.owner_id;

-- name: read_model_owners
-- Every user/agent with entries or read-model rows (a rebuild also clears stale rows).
SELECT 'user' AS owner_type, user_id AS owner_id
  FROM user_profile WHERE tenant_id = %(tenant_id)s AND 'user' = ANY (%(owner_types)s)
UNION
SELECT 'agent', agent_id
  FROM skill_proposal WHERE tenant_id = %(tenant_id)s AND 'agent' = ANY (%(owner_types)s)
UNION
SELECT DISTINCT owner_type, owner_id
  FROM memory_entries
 WHERE tenant_id = %(tenant_id)s AND owner_type = ANY (%(owner_types)s)
ORDER BY 1, 2;

-- name: all_tenants
-- Tenants with entries (a loose index scan over the primary key) or read-model rows.
WITH RECURSIVE t AS (
    (SELECT tenant_id FROM memory_entries ORDER BY tenant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT e.tenant_id FROM memory_entries e
             WHERE e.tenant_id > t.tenant_id ORDER BY e.tenant_id LIMIT 1)
      FROM t WHERE t.tenant_id IS NOT NULL)
SELECT tenant_id FROM t WHERE tenant_id IS NOT NULL
UNION SELECT tenant_id FROM user_profile
UNION SELECT tenant_id FROM skill_proposal
ORDER BY 1;

-- name: owner_entries
-- The active entries of one owner of the kinds a read model folds.
SELECT id, owner_type, owner_id, kind, key, canonical_statement, confidence, valid_from,
       source_session_id, fields, status
  FROM memory_entries
 WHERE tenant_id = %(tenant_id)s AND owner_type = %(owner_type)s AND owner_id = %(owner_id)s
   AND status = 'active' AND kind = ANY (%(kinds)s);

-- name: profile_keys
SELECT key FROM user_profile WHERE tenant_id = %(tenant_id)s AND user_id = %(user_id)s;

-- name: delete_profile_rows
DELETE FROM user_profile
 WHERE tenant_id = %(tenant_id)s AND user_id = %(user_id)s AND key = ANY (%(keys)s);

-- name: upsert_profile_rows
-- %(rows)s: a JSON array of rows; an unchanged row is left as it is (updated_at too).
INSERT INTO user_profile AS p
       (tenant_id, user_id, key, value, statement, confidence, source_entry_ids, conflicts,
        valid_from, updated_at)
SELECT %(tenant_id)s, %(user_id)s, r.key, r.value, r.statement, r.confidence,
       ARRAY(SELECT jsonb_array_elements_text(r.source_entry_ids)::bigint),
       r.conflicts, r.valid_from, %(now)s
  FROM jsonb_to_recordset(%(rows)s) AS r(key text, value text, statement text,
       confidence real, source_entry_ids jsonb, conflicts jsonb, valid_from timestamptz)
ON CONFLICT (tenant_id, user_id, key) DO UPDATE
   SET value = EXCLUDED.value, statement = EXCLUDED.statement,
       confidence = EXCLUDED.confidence, source_entry_ids = EXCLUDED.source_entry_ids,
       conflicts = EXCLUDED.conflicts, valid_from = EXCLUDED.valid_from,
       updated_at = EXCLUDED.updated_at
 WHERE (p.value, p.statement, p.confidence, p.source_entry_ids, p.conflicts, p.valid_from)
       IS DISTINCT FROM
       (EXCLUDED.value, EXCLUDED.statement, EXCLUDED.confidence, EXCLUDED.source_entry_ids,
        EXCLUDED.conflicts, EXCLUDED.valid_from)
RETURNING key;

-- name: agent_skills
-- Locked: a review waits for the recomputation that read its row (which may delete it),
-- instead of committing in between and being deleted unseen.
SELECT * FROM skill_proposal
 WHERE tenant_id = %(tenant_id)s AND agent_id = %(agent_id)s
 ORDER BY skill_key
   FOR UPDATE;

-- name: delete_skill_rows
DELETE FROM skill_proposal WHERE tenant_id = %(tenant_id)s AND id = ANY (%(ids)s);

-- name: update_skill_rows
-- %(rows)s: a JSON array of rows of skills the agent has; an unchanged row is left as it
-- is (updated_at too). Review columns are never touched here.
UPDATE skill_proposal AS s
   SET goal = r.goal, steps = r.steps, failures = r.failures, applies_to = r.applies_to,
       evidence_count = r.evidence_count, source_entry_ids = r.ids,
       failure_count = r.failure_count, successes_since_failure = r.successes_since_failure,
       last_failure_at = r.last_failure_at, updated_at = %(now)s
  FROM (SELECT r.*, ARRAY(SELECT jsonb_array_elements_text(r.source_entry_ids)::bigint) AS ids
          FROM jsonb_to_recordset(%(rows)s) AS r(skill_key text, goal text, steps jsonb,
               failures jsonb, applies_to jsonb, evidence_count integer,
               source_entry_ids jsonb, failure_count integer,
               successes_since_failure integer, last_failure_at timestamptz)) AS r
 WHERE s.tenant_id = %(tenant_id)s AND s.agent_id = %(agent_id)s AND s.skill_key = r.skill_key
   AND (s.goal, s.steps, s.failures, s.applies_to, s.evidence_count, s.source_entry_ids,
        s.failure_count, s.successes_since_failure, s.last_failure_at)
       IS DISTINCT FROM (r.goal, r.steps, r.failures, r.applies_to, r.evidence_count, r.ids,
        r.failure_count, r.successes_since_failure, r.last_failure_at)
RETURNING s.id;

-- name: insert_skill_rows
-- %(rows)s: a JSON array of rows of skills new to the agent, in the order their ids are
-- to be taken. Every row an INSERT is given
-- takes an id, so only new skills come here and recomputing uses up no ids. Runs for a
-- tenant hold its checkpoint lock, so no other run inserts the same skill meanwhile.
INSERT INTO skill_proposal
       (tenant_id, agent_id, skill_key, goal, steps, failures, applies_to, evidence_count,
        source_entry_ids, failure_count, successes_since_failure, last_failure_at,
        created_at, updated_at)
SELECT %(tenant_id)s, %(agent_id)s, r.skill_key, r.goal, r.steps, r.failures, r.applies_to,
       r.evidence_count, ARRAY(SELECT jsonb_array_elements_text(r.source_entry_ids)::bigint),
       r.failure_count, r.successes_since_failure, r.last_failure_at, %(now)s, %(now)s
  FROM ROWS FROM (jsonb_to_recordset(%(rows)s) AS (skill_key text, goal text,
       steps jsonb, failures jsonb, applies_to jsonb, evidence_count integer,
       source_entry_ids jsonb, failure_count integer, successes_since_failure integer,
       last_failure_at timestamptz)) WITH ORDINALITY AS r
 ORDER BY r.ordinality  -- ids in the order given
RETURNING id;

-- name: policy_review_skills
-- The publication policy's decisions: %(publish)s ids become published by the policy,
-- %(unpublish)s ids (published by the policy) go back to review.
UPDATE skill_proposal
   SET status = CASE WHEN id = ANY (%(publish)s) THEN 'published' ELSE 'proposed' END,
       reviewed_by = CASE WHEN id = ANY (%(publish)s) THEN %(reviewer)s END,
       reviewed_at = CASE WHEN id = ANY (%(publish)s) THEN %(now)s END,
       review_reason = CASE WHEN id = ANY (%(publish)s) THEN %(reason)s END,
       updated_at = %(now)s
 WHERE tenant_id = %(tenant_id)s AND agent_id = %(agent_id)s
   AND id = ANY (%(publish)s || %(unpublish)s);

-- name: skill_ids
SELECT id, skill_key, status, reviewed_by FROM skill_proposal
 WHERE tenant_id = %(tenant_id)s AND agent_id = %(agent_id)s;

-- name: delete_stale_links
-- Lineage of the given read-model rows that is not in the wanted (src_ids, dst_ids) pairs.
DELETE FROM memory_links l
 WHERE l.tenant_id = %(tenant_id)s AND l.relation = 'projected_to'
   AND l.dst_type = %(dst_type)s AND l.dst_id = ANY (%(rows)s)
   AND NOT EXISTS (
       SELECT 1 FROM unnest(%(src_ids)s::bigint[], %(dst_ids)s::text[]) AS w(src_id, dst_id)
        WHERE w.src_id = l.src_id AND w.dst_id = l.dst_id);

-- name: insert_projection_links
INSERT INTO memory_links (tenant_id, src_type, src_id, relation, dst_type, dst_id, created_at)
SELECT %(tenant_id)s, 'entry', w.src_id, 'projected_to', %(dst_type)s, w.dst_id, %(now)s
  FROM unnest(%(src_ids)s::bigint[], %(dst_ids)s::text[]) AS w(src_id, dst_id)
ON CONFLICT DO NOTHING;

-- name: get_profile
SELECT * FROM user_profile
 WHERE tenant_id = %(tenant_id)s AND user_id = %(user_id)s
 ORDER BY key;

-- name: list_skills
SELECT * FROM skill_proposal
 WHERE tenant_id = %(tenant_id)s
   AND (%(agent_id)s::text IS NULL OR agent_id = %(agent_id)s)
   AND (%(status)s::text IS NULL OR status = %(status)s)
 ORDER BY agent_id, skill_key;

-- name: review_skill
UPDATE skill_proposal
   SET status = %(status)s, reviewed_by = %(reviewer)s, reviewed_at = %(now)s,
       review_reason = %(reason)s, updated_at = %(now)s
 WHERE tenant_id = %(tenant_id)s AND id = %(id)s
RETURNING *;

-- name: profile_users
SELECT DISTINCT user_id FROM user_profile
 WHERE tenant_id = %(tenant_id)s
 ORDER BY user_id
 LIMIT %(limit)s;
