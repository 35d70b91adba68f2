//go:build race

package channels_test

// linRaceDivisor divides the linearizability tests' counts under the race
// detector: by 4, as every count of the suite is under -race (TESTING.md).
const linRaceDivisor = 4
