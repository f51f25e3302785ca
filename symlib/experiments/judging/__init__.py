"""The judging floor of the book's machinery: claims and their verdicts (:mod:`.claims`), the
registry of thresholds quoted from the papers (:mod:`.thresholds`), the scale label of every
result (:mod:`.scales`) and the saved runs with their provenance (:mod:`.results`). It imports
the bench floor (profiles, cache, registry) only; the three papers and the report build on it."""
