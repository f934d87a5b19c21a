package cli

import (
	"bytes"
	"strings"
	"testing"
)

// Every command's -h and --help print its usage once, on stdout, and exit
// 0; the subcommands of server, secret and sandbox are found in their
// groups' own listings, so a new one is checked too.
func TestHelpEverywhere(t *testing.T) {
	type target struct {
		name string
		run  func(args []string) (int, string, string)
	}
	runner := func(run func([]string, *bytes.Buffer, *bytes.Buffer) int, prefix ...string) func([]string) (int, string, string) {
		return func(args []string) (int, string, string) {
			var out, errb bytes.Buffer
			code := run(append(append([]string(nil), prefix...), args...), &out, &errb)
			return code, out.String(), errb.String()
		}
	}
	targets := []target{{"mcp-gateway", runner(func(a []string, o, e *bytes.Buffer) int { return runLaunch(a, o, e) })}}
	for _, c := range commands() {
		run := runner(func(a []string, o, e *bytes.Buffer) int { return c.run(a, o, e) })
		targets = append(targets, target{c.name, run})
		code, out, _ := run([]string{"--help"})
		if code != exitOK || !strings.Contains(out, "\nCommands:\n") {
			continue // not a group
		}
		_, list, _ := strings.Cut(out, "\nCommands:\n")
		for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
			sub := strings.Fields(line)[0]
			targets = append(targets, target{c.name + " " + sub, runner(func(a []string, o, e *bytes.Buffer) int { return c.run(a, o, e) }, sub)})
		}
	}
	if len(targets) < 20 {
		t.Fatalf("only %d commands found", len(targets))
	}
	for _, tg := range targets {
		for _, flag := range []string{"-h", "--help"} {
			code, out, errOut := tg.run([]string{flag})
			if code != exitOK || strings.Count(out, "Usage") != 1 || errOut != "" {
				t.Errorf("%s %s: exit %d, %d usages on stdout, stderr %q; want exit 0, one usage on stdout, nothing on stderr", tg.name, flag, code, strings.Count(out, "Usage"), errOut)
			}
		}
	}
}
