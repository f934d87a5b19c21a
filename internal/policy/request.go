package policy

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/cedar-policy/cedar-go"
)

// Server is what policies see of a server (MCP::Server's attributes).
type Server struct {
	Name string
	// Type is "local-stdio", "remote-http", "remote-sse", "remote-dcr",
	// "remote-no-dcr", ...
	Type          string
	IdentityURL   string
	RequiresOAuth bool
	Command       string
	Args          []string
}

// Annotations are a tool's behaviour hints. A nil field is absent.
type Annotations struct {
	ReadOnly, Destructive, Idempotent, OpenWorld *bool
}

// ParseAnnotations reads a tool definition's "annotations".
func ParseAnnotations(def json.RawMessage) Annotations {
	var t struct {
		Annotations struct {
			ReadOnly    *bool `json:"readOnlyHint"`
			Destructive *bool `json:"destructiveHint"`
			Idempotent  *bool `json:"idempotentHint"`
			OpenWorld   *bool `json:"openWorldHint"`
		} `json:"annotations"`
	}
	_ = json.Unmarshal(def, &t)
	return Annotations{t.Annotations.ReadOnly, t.Annotations.Destructive, t.Annotations.Idempotent, t.Annotations.OpenWorld}
}

// Request is one question to the policies.
type Request struct {
	// Principal is the sandbox's name (host mode: MCP::Sandbox) or, when
	// Sandbox is false, the client's (MCP::Client).
	Principal string
	Sandbox   bool
	Action    string
	Server    Server
	// Kind is the resource's type: TypeTool, TypePrompt, TypeResource,
	// TypePrimordial, or TypeServer (register).
	Kind cedar.EntityType
	// Name is the tool's or prompt's original name, the resource's URI or
	// the built-in tool's name.
	Name        string
	Annotations Annotations
	// Args are the call's arguments (a JSON object); nil when not known
	// (listing), which leaves context.args out.
	Args json.RawMessage
	Time time.Time
}

func (r *Request) principal() cedar.EntityUID {
	if r.Sandbox {
		return cedar.NewEntityUID(TypeSandbox, cedar.String(r.Principal))
	}
	return cedar.NewEntityUID(TypeClient, cedar.String(r.Principal))
}

func (r *Request) resource() cedar.EntityUID {
	switch r.Kind {
	case TypeServer:
		return cedar.NewEntityUID(TypeServer, cedar.String(r.Server.Name))
	case TypePrimordial, TypeResource:
		return cedar.NewEntityUID(r.Kind, cedar.String(r.Name))
	}
	return cedar.NewEntityUID(r.Kind, cedar.String(r.Server.Name+"/"+r.Name))
}

func (r *Request) cedarRequest(principal, resource cedar.EntityUID, withArgs bool) cedar.Request {
	ctx := cedar.RecordMap{}
	t := r.Time
	if t.IsZero() {
		t = time.Now()
	}
	ctx["request_time"] = cedar.NewDatetime(t)
	if r.Args != nil && withArgs {
		if v, ok := jsonToCedar(r.Args); ok {
			ctx["args"] = v
		} else {
			ctx["args"] = cedar.NewRecord(nil)
		}
	}
	return cedar.Request{
		Principal: principal,
		Action:    cedar.NewEntityUID(TypeAction, cedar.String(r.Action)),
		Resource:  resource,
		Context:   cedar.NewRecord(ctx),
	}
}

// pessimistic reads an annotation, or its pessimistic value when absent.
func pessimistic(v *bool, worst bool) cedar.Boolean {
	if v == nil {
		return cedar.Boolean(worst)
	}
	return cedar.Boolean(*v)
}

// entityGetter serves the few entities of one request, each built once
// when a policy first reads it.
type entityGetter struct {
	r                            *Request
	principalUID, resourceUID    cedar.EntityUID
	principal, res, srv          cedar.Entity
	hasPrincipal, hasRes, hasSrv bool
}

func (g *entityGetter) Get(uid cedar.EntityUID) (cedar.Entity, bool) {
	r := g.r
	switch uid.Type {
	case TypeServer:
		if string(uid.ID) != r.Server.Name {
			return cedar.Entity{}, false
		}
		if !g.hasSrv {
			g.srv, g.hasSrv = r.serverEntity(), true
		}
		return g.srv, true
	case TypeSandbox, TypeClient:
		if uid != g.principalUID {
			return cedar.Entity{}, false
		}
		if !g.hasPrincipal {
			g.principal = cedar.Entity{UID: uid, Attributes: cedar.NewRecord(cedar.RecordMap{"name": cedar.String(r.Principal)})}
			g.hasPrincipal = true
		}
		return g.principal, true
	case TypeAction:
		return cedar.Entity{UID: uid}, true
	}
	if uid != g.resourceUID {
		return cedar.Entity{}, false
	}
	if !g.hasRes {
		g.res, g.hasRes = r.resourceEntity(uid), true
	}
	return g.res, true
}

func (r *Request) resourceEntity(uid cedar.EntityUID) cedar.Entity {
	attrs := cedar.RecordMap{"name": cedar.String(r.Name)}
	if r.Kind != TypePrimordial && r.Server.Name != "" {
		attrs["server"] = cedar.NewEntityUID(TypeServer, cedar.String(r.Server.Name))
		attrs["serverName"] = cedar.String(r.Server.Name)
	}
	switch r.Kind {
	case TypeTool:
		a := r.Annotations
		attrs["readOnly"] = pessimistic(a.ReadOnly, false)
		attrs["destructive"] = pessimistic(a.Destructive, true)
		attrs["idempotent"] = pessimistic(a.Idempotent, false)
		attrs["openWorld"] = pessimistic(a.OpenWorld, true)
	case TypeResource:
		attrs["uri"] = cedar.String(r.Name)
	}
	var parents cedar.EntityUIDSet
	if r.Kind != TypePrimordial && r.Server.Name != "" {
		parents = cedar.NewEntityUIDSet(cedar.NewEntityUID(TypeServer, cedar.String(r.Server.Name)))
	}
	return cedar.Entity{UID: uid, Parents: parents, Attributes: cedar.NewRecord(attrs)}
}

func (r *Request) serverEntity() cedar.Entity {
	s := r.Server
	args := make([]cedar.Value, len(s.Args))
	for i, a := range s.Args {
		args[i] = cedar.String(a)
	}
	return cedar.Entity{UID: cedar.NewEntityUID(TypeServer, cedar.String(s.Name)), Attributes: cedar.NewRecord(cedar.RecordMap{
		"name":          cedar.String(s.Name),
		"type":          cedar.String(s.Type),
		"identityURL":   cedar.String(s.IdentityURL),
		"requiresOAuth": cedar.Boolean(s.RequiresOAuth),
		"command":       cedar.String(s.Command),
		"args":          cedar.NewSet(args...),
	})}
}

// jsonToCedar converts a JSON value: objects to records, arrays to sets,
// integers to Long, other numbers to decimal (or, beyond its range, a
// string), null members left out.
func jsonToCedar(raw json.RawMessage) (cedar.Value, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return toCedar(v)
}

func toCedar(v any) (cedar.Value, bool) {
	switch v := v.(type) {
	case nil:
		return nil, false
	case bool:
		return cedar.Boolean(v), true
	case string:
		return cedar.String(v), true
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return cedar.Long(i), true
		}
		if f, err := v.Float64(); err == nil && !math.IsInf(f, 0) && math.Abs(f) < 9e14 {
			if d, err := cedar.NewDecimalFromFloat(f); err == nil {
				return d, true
			}
		}
		return cedar.String(v.String()), true
	case []any:
		out := make([]cedar.Value, 0, len(v))
		for _, e := range v {
			if c, ok := toCedar(e); ok {
				out = append(out, c)
			}
		}
		return cedar.NewSet(out...), true
	case map[string]any:
		m := make(cedar.RecordMap, len(v))
		for k, e := range v {
			if c, ok := toCedar(e); ok {
				m[cedar.String(k)] = c
			}
		}
		return cedar.NewRecord(m), true
	}
	return nil, false
}
