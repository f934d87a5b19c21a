package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The gateway does not link the JavaScript engine: code mode runs it in
// mcp-gateway-codemode, so a gateway pays for it only when programs run.
func TestTheGatewayDoesNotLinkTheJavaScriptEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/dop251/") || strings.HasPrefix(dep, "github.com/dlclark/regexp2") {
			t.Errorf("mcp-gateway links %s: the JavaScript engine belongs in cmd/mcp-gateway-codemode only", dep)
		}
	}
}
