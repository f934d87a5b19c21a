// Package sample is what progress_test runs `go test -json` on: one test of
// each outcome. It lives under testdata so that ./... does not run it.
package sample

import (
	"os"
	"testing"
	"time"
)

func TestQuick(t *testing.T) {}

func TestSlow(t *testing.T) { time.Sleep(1100 * time.Millisecond) }

func TestSkipped(t *testing.T) { t.Skip("needs the thing") }

func TestFails(t *testing.T) {
	if os.Getenv("SAMPLE_FAIL") == "" {
		return
	}
	t.Run("inner", func(t *testing.T) { t.Log("what the user needs to read"); t.Fail() })
}
