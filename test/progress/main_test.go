package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// goTestJSON runs go test -json on the sample package and returns its output.
func goTestJSON(t *testing.T, fail bool) []byte {
	t.Helper()
	cmd := exec.Command("go", "test", "-json", "-count=1", "./testdata/sample")
	cmd.Env = os.Environ()
	if fail {
		cmd.Env = append(cmd.Env, "SAMPLE_FAIL=1")
	}
	out, _ := cmd.Output() // a failing package exits 1; its events are what matter
	if len(out) == 0 {
		t.Fatal("go test -json printed nothing")
	}
	return out
}

func TestProgressOfAPassingPackage(t *testing.T) {
	var b bytes.Buffer
	failed, err := run(bytes.NewReader(goTestJSON(t, false)), &b)
	if err != nil || failed {
		t.Fatalf("failed=%v err=%v, want a pass:\n%s", failed, err, &b)
	}
	got := b.String()
	for _, want := range []string{"    ok    TestSlow (", "    skip  TestSkipped: sample_test.go:", "needs the thing", "ok    github.com/"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "TestQuick") {
		t.Errorf("a quick passing test got a line:\n%s", got)
	}
}

func TestProgressOfAFailingPackage(t *testing.T) {
	var b bytes.Buffer
	failed, err := run(bytes.NewReader(goTestJSON(t, true)), &b)
	if err != nil || !failed {
		t.Fatalf("failed=%v err=%v, want a failure:\n%s", failed, err, &b)
	}
	got := b.String()
	for _, want := range []string{"--- FAIL: TestFails/inner", "what the user needs to read", "FAIL  github.com/"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

func TestProgressOfABuildFailure(t *testing.T) {
	in := `{"ImportPath":"example.com/x","Action":"build-output","Output":"x.go:3:1: syntax error\n"}
{"ImportPath":"example.com/x","Action":"build-fail"}
{"Action":"start","Package":"example.com/x"}
{"Action":"output","Package":"example.com/x","Output":"FAIL\texample.com/x [build failed]\n"}
{"Action":"fail","Package":"example.com/x","Elapsed":0}
`
	var b bytes.Buffer
	failed, err := run(strings.NewReader(in), &b)
	if err != nil || !failed {
		t.Fatalf("failed=%v err=%v, want a failure", failed, err)
	}
	if got := b.String(); !strings.Contains(got, "x.go:3:1: syntax error") || !strings.Contains(got, "[build failed]") {
		t.Errorf("the build error is not shown:\n%s", got)
	}
}
