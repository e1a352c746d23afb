//go:build !race

package admitwasm_test

const raceEnabled = false
