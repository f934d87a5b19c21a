package host

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// A remote server's credential comes from the secret store, bound to the
// server's URL: without it the server is registered with a warning and a
// sandbox cannot attach it; once set, its tools are listed and a sandbox
// reaches it with the header filled in.
func TestRemoteServerSecret(t *testing.T) {
	h := openHost(t, t.TempDir())
	url := remoteServer(t, "Bearer s3cret")
	ctx := context.Background()
	res := mustAdd(t, h, ServerRequest{Name: "api", URL: url, Transport: "http", Headers: []string{"Authorization: Bearer ${token}"}})
	wantWarn := "its tools could not be listed yet, so mcp-find knows only its name and description: mcp server \"api\": placeholder ${token}: secret mcp:api:token: not set; set it with `mcp-gateway secret set mcp:api:token`"
	if !slices.Equal(res.Warnings, []string{wantWarn}) {
		t.Errorf("warnings:\n got  %q\n want %q", res.Warnings, wantWarn)
	}
	info, err := h.InspectServer("api")
	if err != nil || info.Kind != "remote" || !slices.Equal(info.Secrets, []SecretStatus{{Name: "mcp:api:token", Status: "not set"}}) {
		t.Errorf("inspect before the secret: %+v %v", info, err)
	}
	_, err = h.CreateSandbox(ctx, SandboxRequest{Name: "a", Static: []string{"api"}})
	wantErr(t, "static sandbox without the secret", err, "sandbox \"a\": mcp server \"api\": placeholder ${token}: secret mcp:api:token: not set; set it with `mcp-gateway secret set mcp:api:token`")

	// A dynamic sandbox that has it attached from the start (as after a
	// restart) shows why it has no instance, and gets it once the secret is set.
	d := mustSandbox(t, h, "d")
	c := connect(t, h, d.Token)
	if got := c.callErr("mcp-add", map[string]string{"name": "api"}); got != "mcp-add: mcp server \"api\": placeholder ${token}: secret mcp:api:token: not set; set it with `mcp-gateway secret set mcp:api:token`" {
		t.Errorf("mcp-add without the secret: %q", got)
	}

	warnings, err := h.SetSecret(ctx, "mcp:api:token", "s3cret")
	if err != nil || len(warnings) != 0 {
		t.Fatalf("secret set: %v %v", warnings, err)
	}
	info, _ = h.InspectServer("api")
	if !slices.Equal(info.Secrets, []SecretStatus{{Name: "mcp:api:token", Status: "set"}}) {
		t.Errorf("inspect after the secret: %+v", info.Secrets)
	}
	if got := c.callOK("mcp-add", map[string]string{"name": "api"}); !strings.HasPrefix(got, `Added mcp server "api" with 3 tools.`) {
		t.Errorf("mcp-add with the secret: %q", got)
	}
	if got := c.callOK("echo", map[string]string{"text": "through the header"}); got != "through the header" {
		t.Errorf("echo through the remote server: %q", got)
	}
	if ls := h.Secrets(); len(ls) != 1 || ls[0].Name != "mcp:api:token" || ls[0].Server != "api" || ls[0].Key != "token" {
		t.Errorf("secret ls: %+v", ls)
	}

	// Pointing the registration at another URL leaves the secret behind:
	// it is not sent there, and inspect and the warning say so.
	other := remoteServer(t, "Bearer s3cret")
	res, err = h.AddServer(ctx, ServerRequest{Name: "api", URL: other, Transport: "http", Headers: []string{"Authorization: Bearer ${token}"}, Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) < 2 || res.Warnings[0] != "the endpoint changed: its secrets (mcp:api:token) were set for the old one and are not sent until set again with `mcp-gateway secret set NAME`" ||
		!strings.HasPrefix(res.Warnings[1], `sandbox "d": mcp server "api": placeholder ${token}: secret mcp:api:token: set for a different endpoint of server "api"`) {
		t.Errorf("replace warnings: %q", res.Warnings)
	}
	info, _ = h.InspectServer("api")
	if !slices.Equal(info.Secrets, []SecretStatus{{Name: "mcp:api:token", Status: "set for another endpoint"}}) {
		t.Errorf("inspect after the URL changed: %+v", info.Secrets)
	}
	if st := h.Sandboxes()[0].Status["api"]; st.State != "failed" || !strings.Contains(st.LastError, "set for a different endpoint") {
		t.Errorf("sandbox ls after the URL changed: %+v", st)
	}
	if hs := h.HealthSandboxes()["d"]; hs.Upstreams["api"].State != "failed" {
		t.Errorf("health after the URL changed: %+v", hs)
	}
	// Setting it again restarts the sandbox's instance with it.
	if warnings, err := h.SetSecret(ctx, "mcp:api:token", "s3cret"); err != nil || len(warnings) != 0 {
		t.Fatalf("secret set again: %v %v", warnings, err)
	}
	if got := c.callOK("echo", map[string]string{"text": "back"}); got != "back" {
		t.Errorf("echo after the secret was set again: %q", got)
	}
	// A value the server refuses is stored, and the restart's failure is
	// a warning naming the sandbox.
	warnings, err = h.SetSecret(ctx, "mcp:api:token", "wrong")
	if err != nil || !slices.Equal(warnings, []string{`sandbox "d": mcp server "api" refused the credentials (HTTP 401); check its headers`}) {
		t.Errorf("secret set to a refused value: %q %v", warnings, err)
	}
	if err := h.RemoveSecret("mcp:api:token"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "secret rm again", h.RemoveSecret("mcp:api:token"), "secret mcp:api:token: not set")
	if len(h.Secrets()) != 0 {
		t.Errorf("secrets after rm: %+v", h.Secrets())
	}
}

// secret set refuses a bad name, a reserved key and an unknown server, and
// warns about a secret its server does not use.
func TestSetSecretRefusals(t *testing.T) {
	h := openHost(t, t.TempDir())
	mustAdd(t, h, localServer(t, "mem"))
	ctx := context.Background()
	for _, tt := range []struct{ name, want string }{
		{"token", `secret name "token": it does not start with "mcp:"; expected mcp:<server>:<key>, both made of letters, digits, '.', '-' and '_' (for example mcp:github:token)`},
		{"mcp:mem:sandbox", "secret mcp:mem:sandbox: ${sandbox} is reserved for the sandbox's name; choose another name"},
		{"mcp:mem:sandbox_dir", "secret mcp:mem:sandbox_dir: ${sandbox_dir} is reserved for the sandbox's directory; choose another name"},
		{"mcp:mem:client_dir", "secret mcp:mem:client_dir: ${client_dir} is reserved for the client's directory; choose another name"},
		{"mcp:nope:key", `secret mcp:nope:key: mcp server "nope" is not registered (registered: mem)`},
	} {
		_, err := h.SetSecret(ctx, tt.name, "v")
		wantErr(t, "secret set "+tt.name, err, tt.want)
	}
	warnings, err := h.SetSecret(ctx, "mcp:mem:unused", "v")
	if err != nil || !slices.Equal(warnings, []string{`mcp server "mem" names no ${unused} in its headers, env or args, so this secret is not used`}) {
		t.Errorf("unused secret: %q %v", warnings, err)
	}
	wantErr(t, "secret rm bad name", h.RemoveSecret("x"), `secret name "x": it does not start with "mcp:"; expected mcp:<server>:<key>, both made of letters, digits, '.', '-' and '_' (for example mcp:github:token)`)
}

// A local server's secret reaches its environment; a sandbox that has the
// server attached restarts it when the secret is rotated.
func TestLocalServerSecretRotated(t *testing.T) {
	h := openHost(t, t.TempDir())
	ctx := context.Background()
	res := mustAdd(t, h, localServer(t, "mem", "API_KEY=${api_key}"))
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "env API_KEY: ${api_key} is not set (secret mcp:mem:api_key: not set; set it with `mcp-gateway secret set mcp:mem:api_key`)") {
		t.Errorf("warnings without the secret: %q", res.Warnings)
	}
	if _, err := h.SetSecret(ctx, "mcp:mem:api_key", "one"); err != nil {
		t.Fatal(err)
	}
	sb := mustSandbox(t, h, "s", "mem")
	c := connect(t, h, sb.Token)
	if got := c.callOK("env", map[string]string{"name": "API_KEY"}); got != "true:one" {
		t.Errorf("API_KEY: %q", got)
	}
	if _, err := h.SetSecret(ctx, "mcp:mem:api_key", "two"); err != nil {
		t.Fatal(err)
	}
	if got := c.callOK("env", map[string]string{"name": "API_KEY"}); got != "true:two" {
		t.Errorf("API_KEY after rotation: %q", got)
	}
}

// A server whose env or arguments name the reserved ${sandbox} has its
// tools listed at registration like any other (the listing instance is no
// sandbox's: ${sandbox} is empty there). It used to be refused there as an
// unset secret, with advice (`secret set mcp:mem:sandbox`) that secret set
// refuses, so mcp-find never knew its tools.
func TestReservedPlaceholdersListed(t *testing.T) {
	h := openHost(t, t.TempDir())
	res := mustAdd(t, h, localServer(t, "mem", "SB=${sandbox}", "DIR=${sandbox_dir}/graph"))
	if len(res.Warnings) != 0 || len(res.Server.Tools) != 3 {
		t.Errorf("registration: warnings %q, tools %v", res.Warnings, res.Server.Tools)
	}
	if info, _ := h.InspectServer("mem"); len(info.Secrets) != 0 {
		t.Errorf("reserved placeholders shown as secrets: %+v", info.Secrets)
	}
}
