//go:build race

package codemode

const raceEnabled = true
