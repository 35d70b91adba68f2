//go:build !race

package smartpool_test

const raceDivisor = 1
