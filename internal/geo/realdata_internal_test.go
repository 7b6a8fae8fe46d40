package geo

// realDataWithoutRace says why a test that reads every record of the real
// dataset, or every postal code, skips under -race: the work is single
// threaded, so the race detector finds nothing and slows it tenfold.
const realDataWithoutRace = "built with -race, which slows reading the whole real dataset tenfold with nothing concurrent to check: .ci/run runs it without -race (step \"The real dataset, whole\")"
