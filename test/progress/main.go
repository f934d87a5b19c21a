// Command progress reads `go test -json` on stdin and prints what a person
// waiting for `make test` wants to see: a line for each top-level test that
// took a second or more (so the long end-to-end package shows it is moving),
// each skipped top-level test with its reason, the whole output of every
// failed test and of a package that failed outside a test (a build error, a
// panic, a timeout), and one line per package. It exits 1 when anything
// failed, so `go test -json ... | progress` under pipefail fails as go test
// does.
//
//	go test -json -race ./... | go run ./test/progress
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// event is one line of test2json's output (go doc test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string
}

// slow is how long a passing top-level test must take to get its own line.
const slow = time.Second

func main() {
	failed, err := run(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "progress:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// run formats the events of in onto out and reports whether anything failed.
func run(in io.Reader, out io.Writer) (failed bool, err error) {
	// output holds each running test's lines (subtests under their
	// top-level test) and each package's own, until they end.
	output := map[string][]string{}
	key := func(e event) string {
		top, _, _ := strings.Cut(e.Test, "/")
		return e.Package + "\x00" + top
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(out, "%s\n", line) // not an event: go test's own words
			continue
		}
		isTop := e.Test != "" && !strings.Contains(e.Test, "/")
		switch e.Action {
		case "build-output":
			fmt.Fprint(out, e.Output)
		case "build-fail":
			failed = true
		case "output":
			k := key(e)
			output[k] = append(output[k], e.Output)
		case "pass":
			if isTop && time.Duration(e.Elapsed*float64(time.Second)) >= slow {
				fmt.Fprintf(out, "    ok    %s (%.1fs)\n", e.Test, e.Elapsed)
			}
			if e.Test == "" {
				fmt.Fprintf(out, "ok    %s %.1fs\n", e.Package, e.Elapsed)
			}
			if isTop || e.Test == "" {
				delete(output, key(e))
			}
		case "skip":
			if isTop {
				fmt.Fprintf(out, "    skip  %s: %s\n", e.Test, skipReason(output[key(e)]))
				delete(output, key(e))
			}
			if e.Test == "" {
				fmt.Fprintf(out, "ok    %s (no tests)\n", e.Package)
				delete(output, key(e))
			}
		case "fail":
			failed = true
			if isTop || e.Test == "" {
				k := key(e)
				if e.Test == "" {
					// What is left unclaimed: output outside any test, and
					// tests that never ended (a panic, a timeout).
					for other, lines := range output {
						if strings.HasPrefix(other, e.Package+"\x00") && other != k {
							fmt.Fprint(out, strings.Join(lines, ""))
							delete(output, other)
						}
					}
				}
				fmt.Fprint(out, strings.Join(output[k], ""))
				delete(output, k)
				if e.Test == "" {
					fmt.Fprintf(out, "FAIL  %s %.1fs\n", e.Package, e.Elapsed)
				}
			}
		}
	}
	return failed, sc.Err()
}

// skipReason is the message of a skipped test's t.Skip, from its output.
func skipReason(lines []string) string {
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		return l
	}
	return "(no reason given)"
}
