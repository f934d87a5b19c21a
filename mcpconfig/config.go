package mcpconfig

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Kind says how a server entry was recognised. The order is GitHub key,
// then catalog name, then url, then runCmd.
type Kind string

const (
	KindGitHub  Kind = "github"  // key github/<owner>/<repo>
	KindCatalog Kind = "catalog" // key is a catalog name
	KindRemote  Kind = "remote"  // any other key whose value has url; or an mcpServers url entry
	KindLocal   Kind = "local"   // any other key whose value has runCmd; or an mcpServers command entry
)

// Server is one resolved server, ready to start.
type Server struct {
	// Name is the entry's key in the mcp object: "memory",
	// "github/owner/repo", "my-tool".
	Name string
	Kind Kind
	// Command is the argv to exec. Catalog: the expanded command, e.g.
	// ["npx","-y","@modelcontextprotocol/server-memory"]; GitHub and local:
	// ["/bin/sh","-c",runCmd]; an mcpServers command: [command, args...],
	// without a shell. Nil for a remote server.
	Command []string
	// Env is the catalog entry's env overlaid by the entry's envs, to add to
	// this server's environment only; nil when there is none. For a remote
	// server, which has no process, it holds the values its header
	// placeholders may name (see ResolveHeaders).
	Env map[string]string
	// Dir is the working directory: "/" for a local command; "" for a
	// catalog server (inherit the gateway's) and for a GitHub server (the
	// gateway runs it in its clone); an mcpServers command's cwd ("" when
	// not given).
	Dir string
	// GitHub is set for KindGitHub only.
	GitHub *GitHub

	// URL is a remote server's endpoint, http or https (KindRemote only).
	URL string
	// Headers are sent to a remote server with every request, as written:
	// values may hold ${NAME} placeholders, which ResolveHeaders replaces.
	// Nil when there are none.
	Headers map[string]string
	// Transport is a remote server's transport: TransportHTTP (streamable
	// HTTP), TransportSSE (HTTP+SSE), or "" to detect it.
	Transport string
	// InitializeFirst starts a remote server's sessions with initialize (the
	// entry's "discoverFirst": false), so a server that speaks both eras is
	// spoken to in the session era, and server/discover is asked only when
	// initialize is refused. By default server/discover is asked first, and
	// initialize only when that is refused.
	InitializeFirst bool
	// OAuth is a remote server's "oauth" entry: the gateway gets its
	// tokens by OAuth (see OAuth). Nil when there is none.
	OAuth *OAuth

	// Timeout bounds one call to the server (the entry's "timeout", in
	// seconds); 0 leaves the gateway's default.
	Timeout time.Duration

	// Share is how the clients of the gateway share a local, catalog or
	// GitHub server's process (the entry's "share"): ShareProcess (""),
	// one process for every client, or SharePerClient, a process per
	// client session. A remote server always gets a session per client.
	Share string
}

// Values of Server.Share.
const (
	ShareProcess   = ""           // one process shared by every client (the default; "shared" in the JSON)
	SharePerClient = "per-client" // a process per client session
)

// GitHub says where a GitHub server comes from and how to install it.
type GitHub struct {
	Owner, Repo string
	// InstallCmd is run with /bin/sh -c in the clone before the server
	// starts; "" for none.
	InstallCmd string
}

// CloneURL returns base + "/" + Owner + "/" + Repo + ".git"; base "" means
// "https://github.com". A trailing slash on base is ignored.
func (g *GitHub) CloneURL(base string) string {
	if base == "" {
		base = "https://github.com"
	}
	return strings.TrimRight(base, "/") + "/" + g.Owner + "/" + g.Repo + ".git"
}

// Properties each kind of entry understands besides a catalog entry's own.
var (
	githubProps = []string{"runCmd", "run_cmd", "installCmd", "install_cmd", "envs"}
	localProps  = []string{"runCmd", "run_cmd", "envs"}
)

// Parse parses and validates data, the whole mcp object, against cat (nil
// means Builtin()), and resolves it into servers sorted by Name.
//
// It applies Check's rules and then its own: an entry must be a GitHub
// server, a name in cat, have url (a remote server) or have runCmd; a
// catalog server's properties must have their declared types and the
// required ones must be given; runCmd and run_cmd (installCmd and
// install_cmd) given together must agree; no string that reaches a command
// line or an environment may hold a NUL character; a remote server's url,
// headers and transport must be valid (see the package documentation).
// Unknown properties and repeated keys are warnings. A null property counts
// as absent.
//
// A document in the mcpServers format of Claude Desktop, Cursor and VS Code
// ({"mcpServers": {...}}, or VS Code's {"servers": {...}}) is recognised
// and converted into the same servers; see the package documentation.
//
// The error names the server and the property (see Error); it reports every
// problem found. The warnings are returned even with an error.
func Parse(data []byte, cat *Catalog) ([]Server, []Warning, error) {
	if cat == nil {
		cat = Builtin()
	}
	if servers, ok := isServersFile(data); ok {
		return parseServersFile(servers)
	}
	cfg, err := parseObject(data)
	if err != nil {
		return nil, nil, err
	}
	var (
		servers = make([]Server, 0, len(cfg.entries))
		warns   []Warning
		errs    []error
	)
	var named []string // the names Check's rules let through
	for _, e := range cfg.entries {
		if errs1 := checkEntry(e); len(errs1) > 0 {
			errs = append(errs, errs1...)
			continue
		}
		named = append(named, e.name)
		if e.dup {
			warns = append(warns, Warning{Server: e.name, Message: "the name is given more than once; the last one is used"})
		}
		for _, p := range e.dupProps {
			warns = append(warns, Warning{Server: e.name, Property: p, Message: fmt.Sprintf("property %q is given more than once; the last one is used", p)})
		}
		s, known, errs1 := resolve(e, cat)
		if known != nil {
			kindKnows := known
			known = func(p string) bool { return p == "timeout" || p == "share" || kindKnows(p) }
		}
		timeout, err := e.timeout()
		if err != nil {
			errs1 = append(errs1, err)
		}
		s.Timeout = timeout
		if s.Share, err = e.share(); err != nil {
			errs1 = append(errs1, err)
		}
		errs = append(errs, errs1...)
		if known != nil {
			warns = append(warns, unknownProps(e, known)...)
		}
		if len(errs1) == 0 {
			servers = append(servers, s)
		}
	}
	errs = append(errs, checkGatewayNames(named)...)
	if len(errs) > 0 {
		return nil, warns, joinErrors(errs)
	}
	return servers, warns, nil
}

// resolve turns an entry that passed Check's rules into a Server. known
// reports the properties the entry's kind understands (nil if unrecognised).
func resolve(e *entry, cat *Catalog) (s Server, known func(string) bool, errs []error) {
	s.Name = e.name
	envs, err := e.envs()
	if err != nil {
		errs = append(errs, err)
	}
	if owner, repo, ok := splitGitHub(e.name); ok {
		runCmd, err1 := e.alias("runCmd", "run_cmd")
		installCmd, err2 := e.alias("installCmd", "install_cmd")
		errs = appendNonNil(errs, err1, err2)
		s.Kind = KindGitHub
		s.Command = shell(runCmd)
		s.Env = envs
		s.GitHub = &GitHub{Owner: owner, Repo: repo, InstallCmd: installCmd}
		return s, listed(githubProps), errs
	}
	if en := cat.lookup(e.name); en != nil {
		argv, env, errs1 := en.expand(e.name, e.props)
		errs = append(errs, errs1...)
		s.Kind = KindCatalog
		s.Command = argv
		s.Env = overlay(env, envs)
		return s, func(p string) bool { _, ok := en.Properties[p]; return ok || p == "envs" }, errs
	}
	if e.has("url") {
		s, errs1 := resolveRemote(e, envs)
		return s, listed(remoteProps), append(errs, errs1...)
	}
	if e.has("runCmd") || e.has("run_cmd") {
		runCmd, err := e.alias("runCmd", "run_cmd")
		errs = appendNonNil(errs, err)
		s.Kind = KindLocal
		s.Command = shell(runCmd)
		s.Env = envs
		s.Dir = "/"
		return s, listed(localProps), errs
	}
	names := strings.Join(cat.Names(), ", ")
	if names == "" {
		names = "none"
	}
	return s, nil, []error{&Error{Server: e.name, Err: ErrUnknownServer,
		Message: fmt.Sprintf(`unknown server; the catalog has: %s (a server of your own needs "runCmd"; a GitHub server is named github/<owner>/<repo>)`, names)}}
}

// alias returns the string given under name or under its other spelling
// (E2B's Python SDK writes run_cmd for runCmd); both given must agree.
func (e *entry) alias(name, other string) (string, error) {
	a, okA := jsonString(e.props[name])
	b, okB := jsonString(e.props[other])
	switch {
	case okA && okB && a != b:
		return "", &Error{Server: e.name, Property: name, Message: fmt.Sprintf("properties %q and %q differ; give only one", name, other)}
	case !okA:
		a, name = b, other
	}
	if strings.IndexByte(a, 0) >= 0 {
		return "", &Error{Server: e.name, Property: name, Message: fmt.Sprintf("property %q must not contain a NUL character", name)}
	}
	return a, nil
}

// timeout decodes the entry's "timeout": seconds a call to the server may
// take, a positive number; 0 when absent.
func (e *entry) timeout() (time.Duration, error) {
	raw, ok := e.props["timeout"]
	if !ok {
		return 0, nil
	}
	var secs float64
	if err := json.Unmarshal(raw, &secs); err != nil || secs <= 0 || secs > 24*3600 {
		return 0, &Error{Server: e.name, Property: "timeout", Message: `property "timeout" must be a number of seconds between 0 and 86400, e.g. 30`}
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// share decodes the entry's "share": "shared" (the default) or "per-client".
func (e *entry) share() (string, error) {
	raw, ok := e.props["share"]
	if !ok {
		return ShareProcess, nil
	}
	switch v, _ := jsonString(raw); v {
	case "shared":
		return ShareProcess, nil
	case SharePerClient:
		return SharePerClient, nil
	}
	return "", &Error{Server: e.name, Property: "share", Message: `property "share" must be "shared" (one process for every client, the default) or "per-client" (a process per client session)`}
}

// envs decodes the entry's envs, which passed checkEnvs.
func (e *entry) envs() (map[string]string, error) {
	raw, ok := e.props["envs"]
	if !ok {
		return nil, nil
	}
	ms, err := members(raw)
	if err != nil {
		return nil, &Error{Server: e.name, Property: "envs", Message: syntaxMessage(err), Err: err}
	}
	env := make(map[string]string, len(ms))
	for _, m := range ms {
		v, _ := jsonString(m.value)
		if strings.IndexByte(v, 0) >= 0 {
			return nil, &Error{Server: e.name, Property: "envs", Env: m.key, Message: fmt.Sprintf("env %q must not contain a NUL character", m.key)}
		}
		env[m.key] = v
	}
	if len(env) == 0 {
		return nil, nil
	}
	return env, nil
}

// unknownProps warns of each property the entry's kind does not understand.
func unknownProps(e *entry, known func(string) bool) []Warning {
	var warns []Warning
	for _, p := range e.keys {
		if !known(p) {
			warns = append(warns, Warning{Server: e.name, Property: p, Message: fmt.Sprintf("unknown property %q ignored", p)})
		}
	}
	return warns
}

func shell(cmd string) []string { return []string{"/bin/sh", "-c", cmd} }

// overlay returns base with top's variables set over it; nil if both are empty.
func overlay(base, top map[string]string) map[string]string {
	if len(base) == 0 && len(top) == 0 {
		return nil
	}
	env := make(map[string]string, len(base)+len(top))
	maps.Copy(env, base)
	maps.Copy(env, top)
	return env
}

func listed(names []string) func(string) bool {
	return func(p string) bool { return slices.Contains(names, p) }
}

func appendNonNil(errs []error, more ...error) []error {
	for _, err := range more {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
