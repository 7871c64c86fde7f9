-- The (company_id, visit_id) unique index on visits goes: `sightings` already refuses a sighting id twice per company, a
-- visit's visit_id is its first sighting's, and no query reads the index; it was about a tenth of the pages each
-- ingested visit wrote (docs/decisions.md, "Ingest CPU per visit, third round").
DROP INDEX `visits_company_visit_uq`;
