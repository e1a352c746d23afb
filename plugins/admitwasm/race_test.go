//go:build race

package admitwasm_test

// raceEnabled: the race detector makes a memory bomb's copies some 20 times slower, so
// the containment test does not bound the request time then.
const raceEnabled = true
