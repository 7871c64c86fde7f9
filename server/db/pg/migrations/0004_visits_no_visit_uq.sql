-- As SQLite's 0017: `sightings` refuses a sighting id twice; this index was a second guard no query reads.
DROP INDEX "visits_company_visit_uq";
