//go:build race

package channels_test

// linRaceDivisor divides the linearizability tests' counts under the race
// detector (TESTPLAN §4: a race-tagged file divides counts by 4).
const linRaceDivisor = 4
