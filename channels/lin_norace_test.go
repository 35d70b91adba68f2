//go:build !race

package channels_test

// linRaceDivisor: see lin_race_test.go.
const linRaceDivisor = 1
