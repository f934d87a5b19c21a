package cli

import (
	"bytes"
	"regexp"
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
		for _, line := range strings.Split(strings.TrimRight(list, "\n"), "\n") {
			if !strings.HasPrefix(line, "  ") || strings.HasPrefix(line, "   ") {
				continue // a description under its synopsis
			}
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

// mcp-gateway --help (and mcp-gateway help, which prints the same) lists
// every command, not the few the launcher's text once named.
func TestLauncherHelpListsEveryCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runLaunch([]string{"--help"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	for _, c := range commands() {
		if !strings.Contains(out.String(), "\n  "+c.name+" ") {
			t.Errorf("mcp-gateway --help does not list %q:\n%s", c.name, out.String())
		}
	}
	if !strings.Contains(out.String(), "\n  --config json\n") {
		t.Errorf("mcp-gateway --help lacks the launcher's flags:\n%s", out.String())
	}
}

// A group's help shows each subcommand's description whole, every line
// of it, not its first wrapped line.
func TestGroupHelpShowsWholeDescriptions(t *testing.T) {
	cmds := []adminCommand{
		{name: "create", synopsis: "create NAME [--static a,b]...", text: "Create a sandbox with its own token. With --static, the named servers are\nattached for good.\n\nA second paragraph."},
		{name: "rm", synopsis: "rm NAME", text: "Remove a sandbox."},
	}
	var out, errb bytes.Buffer
	if code := adminUsage("sandbox", cmds, false, &out, &errb); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	want := `Usage: mcp-gateway sandbox <command> [flags]

Commands:
  create NAME [--static a,b]...
      Create a sandbox with its own token. With --static, the named servers are
      attached for good.

      A second paragraph.
  rm NAME
      Remove a sandbox.
`
	if out.String() != want {
		t.Errorf("group help:\n%s\nwant:\n%s", out.String(), want)
	}
}

// Help prints flags with two dashes, as the docs write them, and a flag's
// value name is a word, never a piece of its description (Go's flag
// package takes a back-quoted word of the usage as the value name).
func TestHelpFlagsAsDocumented(t *testing.T) {
	flagLine := regexp.MustCompile(`^  --[a-z0-9-]+( ([A-Za-z_<>.]+|'[^']+'))?$`)
	for _, c := range commands() {
		var out, errb bytes.Buffer
		c.run([]string{"--help"}, &out, &errb)
		_, flags, ok := strings.Cut(out.String(), "\nFlags:\n")
		if !ok {
			continue
		}
		for _, line := range strings.Split(strings.TrimRight(flags, "\n"), "\n") {
			if strings.HasPrefix(line, "    ") {
				continue // a usage
			}
			if !flagLine.MatchString(line) {
				t.Errorf("%s --help: flag line %q; want '  --name' and at most a one-word value name", c.name, line)
			}
		}
	}
}
