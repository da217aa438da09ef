-- Statuses by release: what an override reads (the clusters a release is on) without
-- scanning every cluster's statuses.
CREATE INDEX statuses_by_release ON statuses (release, cluster);
