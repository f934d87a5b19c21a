package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcp-gateway/mcp-gateway/internal/host"
	"github.com/mcp-gateway/mcp-gateway/internal/policy"
)

// runPolicy is `mcp-gateway policy set|ls|rm|test`: the host daemon's policies.
func runPolicy(args []string, stdout, stderr io.Writer) int {
	return runAdmin("policy", []adminCommand{policySet(), policyLs(), policyRm(), policyTest()}, args, stdout, stderr)
}

func policySet() adminCommand {
	var sandbox, name string
	return adminCommand{
		name: "set", synopsis: "set FILE [--sandbox NAME] [--name NAME]",
		text: `Store a file of Cedar policies on the host and apply it at once.
For every sandbox, or one (--sandbox): lists change (clients hear list_changed)
and the next call is decided by them. A document of the same name and scope is
replaced; the name defaults to FILE's base name without .cedar. The policies
are checked first: an error names the file, line and column. See docs/policy.md.`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&sandbox, "sandbox", "", "apply to this sandbox only (default: every sandbox)")
			fs.StringVar(&name, "name", "", "the document's `name` (default: FILE's base name)")
		},
		run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
			file, err := one(args, "policy FILE")
			if err != nil {
				return err
			}
			text, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			// Checked here too, so the message names the file as given.
			if _, err := policy.Parse(policy.DefaultPermit, policy.Source{Name: file, Text: text}); err != nil {
				return fmt.Errorf("invalid policy file:\n%w", err)
			}
			if name == "" {
				name = strings.TrimSuffix(filepath.Base(file), ".cedar")
			}
			req := host.PolicyRequest{Name: name, Sandbox: sandbox, File: file, Text: string(text)}
			var res host.PolicySummary
			if err := c.Do(ctx, http.MethodPut, "/v1/policies", req, &res); err != nil {
				return err
			}
			scope := "every sandbox"
			if sandbox != "" {
				scope = "sandbox " + sandbox
			}
			fmt.Fprintf(stdout, "policy %q set for %s (%d policies)\n", res.Name, scope, len(res.Policies))
			return nil
		},
	}
}

func policyLs() adminCommand {
	return listCommand("List the stored policy documents and their policies.", "/v1/policies", "NAME\tSANDBOX\tPOLICY\tEFFECT\tWHERE",
		func(tw io.Writer, p host.PolicySummary) {
			for _, pol := range p.Policies {
				eff := pol.Effect
				if pol.Approval != "" {
					eff += " (approval)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, dash(p.Sandbox), pol.ID, eff, pol.Where)
			}
		})
}

func policyRm() adminCommand {
	var sandbox string
	return adminCommand{
		name: "rm", synopsis: "rm NAME [--sandbox NAME]", text: "Remove a stored policy document (global, or of --sandbox) and apply the change at once.",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&sandbox, "sandbox", "", "the sandbox the document applies to (default: a global one)")
		},
		run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
			n, err := one(args, "policy NAME")
			if err != nil {
				return err
			}
			path := "/v1/policies/" + url.PathEscape(n)
			if sandbox != "" {
				path += "?sandbox=" + url.QueryEscape(sandbox)
			}
			if err := c.Do(ctx, http.MethodDelete, path, nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "policy %q removed\n", n)
			return nil
		},
	}
}

func policyTest() adminCommand {
	var sandbox, tool, argsJSON string
	var asJSON bool
	return adminCommand{
		name: "test", synopsis: "test --sandbox NAME --tool SERVER/TOOL [--args JSON]",
		text: `Print the decision on a call of the tool by the sandbox, calling nothing.
The tool is named by its server's name and its original name (or a built-in
tool's name); the policies that made the decision follow it. Exit code 0
whatever the decision.`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&sandbox, "sandbox", "", "the sandbox that would call")
			fs.StringVar(&tool, "tool", "", "the tool: `server/tool`, or a built-in tool's name")
			fs.StringVar(&argsJSON, "args", "", "the call's arguments, a JSON `object`")
			jsonFlag(&asJSON)(fs)
		},
		run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
			if len(args) > 0 || sandbox == "" || tool == "" {
				return usagef("give --sandbox NAME and --tool SERVER/TOOL (and optionally --args JSON)")
			}
			req := host.PolicyTestRequest{Sandbox: sandbox, Tool: tool}
			if argsJSON != "" {
				if !json.Valid([]byte(argsJSON)) {
					return usagef("--args is not valid JSON: %s", argsJSON)
				}
				req.Args = json.RawMessage(argsJSON)
			}
			var res host.PolicyTestResult
			if err := c.Do(ctx, http.MethodPost, "/v1/policies/test", req, &res); err != nil {
				return err
			}
			if asJSON {
				return printJSON(stdout, res)
			}
			printPolicyDecision(stdout, res)
			return nil
		},
	}
}

// printPolicyDecision prints policy test's decision, the policies that
// made it and those that could not be evaluated.
func printPolicyDecision(stdout io.Writer, res host.PolicyTestResult) {
	fmt.Fprintf(stdout, "%s: %s\n", res.Decision, res.Reason)
	for i, id := range res.Policies {
		where := ""
		if i < len(res.Where) {
			where = res.Where[i]
		}
		fmt.Fprintf(stdout, "  policy %s\t%s\n", id, where)
	}
	for _, e := range res.Errors {
		fmt.Fprintf(stdout, "  skipped (could not be evaluated): %s\n", e)
	}
}

// runApproval is `mcp-gateway approval ls|allow|deny`.
func runApproval(args []string, stdout, stderr io.Writer) int {
	return runAdmin("approval", []adminCommand{approvalLs(), approvalAnswer("allow"), approvalAnswer("deny")}, args, stdout, stderr)
}

func approvalLs() adminCommand {
	return listCommand(`List the calls waiting for a person's approval (a permit with
@requireApproval), oldest first: id, time, sandbox, method, server/tool,
arguments, reason. Unanswered within the daemon's --approval-timeout, a call is denied.`,
		"/v1/approvals", "ID\tTIME\tSANDBOX\tMETHOD\tCALL\tARGUMENTS\tREASON",
		func(tw io.Writer, a policy.ApprovalRequest) { fmt.Fprintln(tw, a.Describe()) })
}

// approvalAnswer is approval allow or approval deny (verb).
func approvalAnswer(verb string) adminCommand {
	return adminCommand{
		name: verb, synopsis: verb + " ID", text: strings.ToUpper(verb[:1]) + verb[1:] + " a call waiting for approval (its ID from `approval ls`).",
		run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
			id, err := one(args, "approval ID")
			if err != nil {
				return err
			}
			if err := c.Do(ctx, http.MethodPost, "/v1/approvals/"+url.PathEscape(id)+"/"+verb, nil, nil); err != nil {
				return err
			}
			past := map[string]string{"allow": "allowed", "deny": "denied"}[verb]
			fmt.Fprintf(stdout, "call %s %s\n", id, past)
			return nil
		},
	}
}
