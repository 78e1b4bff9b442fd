//go:build !race

package main

// raceDetector is true when the tests run with -race, which multiplies memory use by about 5 to 10.
const raceDetector = false
