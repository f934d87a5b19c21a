package mcpconfig

import "fmt"

// MaxPlainNameLen is the longest plain server name the gateway takes.
const MaxPlainNameLen = 64

// IsPlainName reports whether name follows the rule host mode registers
// servers and sandboxes under: letters, digits, ".", "-" and "_", at most
// MaxPlainNameLen bytes, not "." or "..".
func IsPlainName(name string) bool {
	if name == "" || len(name) > MaxPlainNameLen || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isAlnum(c) && c != '.' && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// checkGatewayNames applies the gateway's own rule for server names,
// stricter than Check's (the platform's, which the contract fixes): a name
// is plain (IsPlainName) or github/<owner>/<repo>. A policy names a tool
// MCP::Tool::"<server>/<tool>", and a tool's name may hold a "/": with a
// "/" anywhere else, server "corp"'s tool "tools/echo" and server
// "corp/tools"'s tool "echo" would be one id, a permit of one a permit of
// both. For the same reason a plain "github" cannot sit beside a
// github/<owner>/<repo> server. names are those no other rule refused.
func checkGatewayNames(names []string) []error {
	var errs []error
	var github, githubRepo string
	for _, name := range names {
		if _, _, ok := splitGitHub(name); ok {
			githubRepo = name
			continue
		}
		if name == "github" {
			github = name
		}
		if !IsPlainName(name) {
			errs = append(errs, &Error{Server: name, Message: fmt.Sprintf(`the gateway takes server names made of letters, digits, ".", "-" and "_" (at most %d, not "." or ".."), or github/<owner>/<repo>; rename the server (policies name a tool "<server>/<tool>", so a "/" or other character in a server's name could make two tools one)`, MaxPlainNameLen)})
		}
	}
	if github != "" && githubRepo != "" {
		errs = append(errs, &Error{Server: github, Message: fmt.Sprintf(`a server named "github" cannot be given with %q: policies name a tool "<server>/<tool>", so "github"'s tool "<owner>/<repo>/<tool>" and %q's tools would share ids; rename the server "github"`, githubRepo, githubRepo)})
	}
	return errs
}
